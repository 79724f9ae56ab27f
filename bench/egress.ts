// The egress governor's cost per push when it never holds anything back (caps far above the inflow,
// a budget far from spent) against the same pushes with no governor, over two sinks: one that does
// nothing (the governor's bare overhead, the worst case for the ratio) and one that does what the Loki
// sink does before its HTTP call (group streams, protobuf encode, snappy), the floor of a real push.
//   node bench/egress.ts [pushes] [rounds]     # default 20 000 pushes of 100 entries, 5 rounds
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { GovernedSink } from "../src/egress/governed-sink.ts";
import { LogEntry, type Batch } from "../src/model.ts";
import { silentLogger } from "../src/obs/logger.ts";
import { encodeRequestSync } from "../src/sinks/loki/request.ts";
import type { PushResult, Sink } from "../src/sinks/sink.ts";
import { systemClock } from "../src/util/clock.ts";

const PUSHES = Number(process.argv[2] ?? 20_000);
const ROUNDS = Number(process.argv[3] ?? 5);
const PER_BATCH = 100;

const NOTHING: PushResult = { dropped: [] };
const noop: Sink = { push: () => Promise.resolve(NOTHING), close: () => Promise.resolve() };
const encoding: Sink = {
  push: (batch) => {
    encodeRequestSync(batch, "protobuf-snappy");
    return Promise.resolve(NOTHING);
  },
  close: () => Promise.resolve(),
};

function batches(): Batch[] {
  const out: Batch[] = [];
  for (let b = 0; b < 64; b++) {
    out.push(
      Array.from(
        { length: PER_BATCH },
        (_, i) =>
          new LogEntry({
            timestampNs: BigInt(Date.now()) * 1_000_000n + BigInt(i),
            labels: { source: b % 2 === 0 ? "pubsub" : "eventlogfile", event_type: "ApiEvent" },
            line: `{"EventIdentifier":"ev-${String(b)}-${String(i)}","pad":"${"x".repeat(300)}"}`,
            checkpoint: { key: "k", value: String(i) },
          }),
      ),
    );
  }
  return out;
}

async function time(sink: Sink, input: Batch[]): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < PUSHES; i++) await sink.push(input[i % input.length]!);
  return ((performance.now() - started) * 1e6) / PUSHES; // ns per push
}

const UNCAPPED = {
  max_lines_per_second: 1e12,
  max_bytes_per_second: 1e15,
  daily_byte_budget: Number.MAX_SAFE_INTEGER,
  budget_action: "pause" as const,
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Median ns per push of `inner` alone and behind a governor, alternating per round. */
async function compare(inner: Sink, input: Batch[]): Promise<{ none: number; governed: number }> {
  const governed = new GovernedSink(inner, UNCAPPED, {
    clock: systemClock,
    logger: silentLogger,
    meter: new MeterProvider().getMeter("bench"),
  });
  await time(inner, input); // warm-up: line byte lengths memoised, JIT settled
  await time(governed, input);
  const none: number[] = [];
  const gov: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    none.push(await time(inner, input));
    gov.push(await time(governed, input));
  }
  return { none: median(none), governed: median(gov) };
}

const input = batches();
const bare = await compare(noop, input);
const encoded = await compare(encoding, input);
const r2 = (x: number): number => Math.round(x * 100) / 100;
process.stdout.write(
  JSON.stringify({
    pushes: PUSHES,
    entries_per_push: PER_BATCH,
    rounds: ROUNDS,
    governor_over_none_encoding_sink: r2(encoded.governed / encoded.none),
    governor_over_none_noop_sink: r2(bare.governed / bare.none),
    governor_ns_per_push: Math.round(bare.governed - bare.none),
    ns_per_push_encoding_sink: Math.round(encoded.none),
    ns_per_push_noop_sink: Math.round(bare.none),
  }) + "\n",
);
