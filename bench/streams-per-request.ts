// What many streams cost against one (#37): the same corpus end to end into the simulated Loki in a
// child process, once as one stream and once spread over 3 and over 20 streams in runs of 100, as
// Pub/Sub topics arrive. Streams Loki accepted moments ago share one request (wire/accepted-streams.ts),
// so after each stream's first push alone a batch is one request whatever its streams. Passes
// alternate, so all see the same host; the ratios are taken per round. Target: each ratio ≥ 0.95.
// Prints one JSON line (bench/run.ts reads the last line).
//   node bench/streams-per-request.ts [entries] [--samples N] [--min-window-ms MS]
import { parseArgs } from "node:util";
import type { LogEntry } from "../src/model.ts";
import { LOKI_DEFAULT_LIMITS } from "../src/sinks/receiving-loki/limits.ts";
import { makeCorpus, spreadOver } from "./codec.ts";
import { e2eWindow, startChildReceiver } from "./pipeline.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    samples: { type: "string", default: "4" },
    "min-window-ms": { type: "string", default: "2000" },
  },
});
const N = Number(positionals[0] ?? 100_000);
const SAMPLES = Number(values.samples);
const MIN_WINDOW_MS = Number(values["min-window-ms"]);
const TARGET = 0.95;
/**
 * The simulated Loki has no per-stream rate limit, and this corpus runs at ~100 MB/s a stream: the
 * sink is told so (as an operator copies a raised per_stream_rate_limit into sink.loki.limits). Under
 * Loki's default 3 MB/s a stream this fast goes alone once its mirrored burst is spent, and Loki
 * itself would answer it 429: that is the limit's cost, not the shape's.
 */
const LIMITS = {
  ...LOKI_DEFAULT_LIMITS,
  per_stream_rate_limit: 2 ** 30,
  per_stream_rate_limit_burst: 2 ** 30,
};

const single = makeCorpus(N);
const three = spreadOver(single, 3);
const twenty = spreadOver(single, 20);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return Number(s[Math.floor(s.length / 2)]!.toFixed(3));
};

const receiver = await startChildReceiver("loki");
try {
  const window = (corpus: readonly LogEntry[]) => e2eWindow(corpus, receiver, MIN_WINDOW_MS, {}, 0, LIMITS);
  await window(single); // warm-up
  const rounds: { one: number; three: number; twenty: number; requests: Record<string, number> }[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const one = await window(single);
    const t3 = await window(three);
    const t20 = await window(twenty);
    rounds.push({
      one: Math.round(one.eps),
      three: Math.round(t3.eps),
      twenty: Math.round(t20.eps),
      // Requests per 1 000 entries: one stream's batches are the floor.
      requests: {
        one: perThousand(one.requests, one.entries),
        three: perThousand(t3.requests, t3.entries),
        twenty: perThousand(t20.requests, t20.entries),
      },
    });
  }
  const r3 = median(rounds.map((r) => r.three / r.one));
  const r20 = median(rounds.map((r) => r.twenty / r.one));
  console.log(
    JSON.stringify({
      bench: "streams_per_request",
      entries: N,
      rounds,
      median_ratio_3_streams_over_1: r3,
      median_ratio_20_streams_over_1: r20,
      target: TARGET,
      ok: r3 >= TARGET && r20 >= TARGET,
    }),
  );
} finally {
  await receiver.stop();
}

function perThousand(requests: number, entries: number): number {
  return Math.round((requests / entries) * 1000 * 100) / 100;
}
