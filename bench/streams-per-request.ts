// The cost of one stream per request (src/sinks/wire/per-stream.ts): the same corpus end to end into
// the simulated Loki in a child process, once as one stream (one request a batch) and once spread
// over 3 streams in runs of 100, as Pub/Sub topics arrive (three requests a batch, up to 4 at once).
// Passes alternate, so both see the same host; the ratio is taken per pair. Target: ratio ≥ 0.8.
//   node bench/streams-per-request.ts [entries] [--samples N] [--min-window-ms MS]
import { parseArgs } from "node:util";
import { LogEntry } from "../src/model.ts";
import { makeCorpus } from "./codec.ts";
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
const TOPICS = ["LoginEventStream", "ApiEventStream", "LightningUriEventStream"];

const single = makeCorpus(N);
const spread = single.map(
  (e, i) =>
    new LogEntry({
      timestampNs: e.timestampNs,
      labels: { source: "pubsub", event_type: TOPICS[Math.floor(i / 100) % TOPICS.length]! },
      line: e.line,
      structuredMetadata: e.structuredMetadata,
      checkpoint: e.checkpoint,
    }),
);

const receiver = await startChildReceiver("loki");
try {
  await e2eWindow(single, receiver, MIN_WINDOW_MS); // warm-up
  const pairs: { one: number; three: number; ratio: number }[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const one = await e2eWindow(single, receiver, MIN_WINDOW_MS);
    const three = await e2eWindow(spread, receiver, MIN_WINDOW_MS);
    pairs.push({ one: Math.round(one.eps), three: Math.round(three.eps), ratio: three.eps / one.eps });
  }
  const ratios = pairs.map((p) => p.ratio).sort((a, b) => a - b);
  console.log(
    JSON.stringify(
      {
        bench: "streams_per_request",
        entries: N,
        pairs,
        median_ratio_3_streams_over_1: Number(ratios[Math.floor(ratios.length / 2)]!.toFixed(3)),
        target: 0.8,
      },
      null,
      2,
    ),
  );
} finally {
  await receiver.stop();
}
