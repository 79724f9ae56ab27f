// The headline ratio on its own: codec passes and e2e passes (into the simulated Loki in a child
// process) interleaved within each sample, as `npm run bench` measures `e2e_over_codec`. About 30 s,
// so two checkouts can be compared by running it from each in turn, several times: a change to the
// sender is real only when it moves the ratio by more than the runs of one checkout move it
// (bench/README.md, "The two figures this host decides").
//
// Usage: node bench/paired.ts [samples=5] [minWindowMs=2000]     prints one JSON line
import { codecWindowOf, codecPasses, makeCorpus, type CodecPass, type CodecWindow } from "./codec.ts";
import {
  e2ePass,
  e2eWindowOf,
  startChildReceiver,
  type BenchReceiver,
  type E2eResult,
  type E2eWindow,
} from "./pipeline.ts";
import { summarise, total } from "./sample.ts";

export interface PairedSample {
  codec: CodecWindow;
  e2e: E2eWindow;
}

/**
 * `samples` paired samples: in each, codec passes and e2e passes alternate (about 0.1 and 0.2 s each)
 * until both sides add up to `minWindowMs`, so a sample's two windows saw the same seconds of the
 * host. Back-to-back 2 s windows did not: the host's speed drifts within seconds, and that drift was
 * most of the ratio's spread. A discarded warm-up sample comes first (with one warm-up pass the first
 * sample ran ~20 % slow).
 */
export async function pairedSamples(
  codecPass: () => CodecPass,
  entries: Parameters<typeof e2ePass>[0],
  receiver: BenchReceiver,
  samples: number,
  minWindowMs: number,
): Promise<PairedSample[]> {
  const sample = async (): Promise<PairedSample> => {
    const codecRuns: CodecPass[] = [];
    const e2ePasses: E2eResult[] = [];
    while (total(codecRuns, (p) => p.ms) < minWindowMs || total(e2ePasses, (p) => p.ms) < minWindowMs) {
      codecRuns.push(codecPass());
      e2ePasses.push(await e2ePass(entries, receiver));
    }
    return { codec: codecWindowOf(codecRuns), e2e: e2eWindowOf(e2ePasses) };
  };
  await sample();
  const out: PairedSample[] = [];
  for (let i = 0; i < samples; i++) out.push(await sample());
  return out;
}

if (import.meta.main) {
  const samples = Number(process.argv[2] ?? 5);
  const minWindowMs = Number(process.argv[3] ?? 2000);
  if (!Number.isInteger(samples) || samples < 1 || !(minWindowMs > 0)) {
    process.stderr.write("usage: node bench/paired.ts [samples] [minWindowMs]\n");
    process.exit(2);
  }
  const corpus = makeCorpus(200_000);
  const receiver = await startChildReceiver("loki");
  try {
    const paired = await pairedSamples(codecPasses(corpus, 1000), corpus, receiver, samples, minWindowMs);
    const figure = (value: (p: PairedSample) => number) => summarise(paired.map(value));
    console.log(
      JSON.stringify({
        bench: "e2e_over_codec",
        samples,
        min_window_ms: minWindowMs,
        e2e_over_codec: figure((p) => p.e2e.eps / p.codec.eps),
        e2e_eps: figure((p) => p.e2e.eps),
        codec_eps: figure((p) => p.codec.eps),
        sender_cpu_us_per_entry: figure((p) => p.e2e.sender_cpu_us_per_entry),
        codec_cpu_us_per_entry: figure((p) => p.codec.cpu_us_per_entry),
        receiver_cpu_us_per_entry: figure((p) => p.e2e.receiver_cpu_us_per_entry ?? 0),
      }),
    );
  } finally {
    await receiver.stop();
  }
}
