// The simulated Loki's decode, ours (src/sim/loki-decode-fast.ts) against protobufjs
// (src/sim/loki-decode-reference.ts) on the same push bodies in the same run: the sink's requests for
// bench/codec.ts's corpus in batches of 1000, as the e2e benchmark sends them. Two races:
//   decode   protobuf bytes → streams, every field read (timestamp, line, metadata): ours makes
//            them on first read, so this is its full cost; `oursUnreadEps` is what the receiver
//            pays when validation reads none of them
//   receive  what the receiver does per push after reading the body: unsnappy, decode, validate
//            (receiver defaults) and count into a `counts` store, as `startLokiReceiver` in bench/pipeline.ts
// Run: `node bench/loki-decode.ts [entries] [batchSize]` prints one JSON line.
import snappy from "snappy";
import { makeCorpus } from "./codec.ts";
import { groupStreams } from "../src/sinks/receiving-loki/streams.ts";
import { encodePushRequest } from "../src/sinks/loki/encode-protobuf.ts";
import { unsnappy } from "../src/sim/loki-decode.ts";
import { decodePushRequest } from "../src/sim/loki-decode-fast.ts";
import { decodePushRequestReference } from "../src/sim/loki-decode-reference.ts";
import type { DecodedStream } from "../src/sim/loki-decoded.ts";
import { defaultIngestLimits, ingest } from "../src/sim/loki-ingest.ts";
import { AcceptedStore } from "../src/sim/loki-store.ts";
import { median } from "./sample.ts";

type Decoder = (body: Buffer) => DecodedStream[];

interface Pass {
  eps: number;
  cpuUsPerEntry: number;
}

/** One pass over every body; `work` returns the entries it saw, checked against the corpus size. */
function pass(count: number, work: () => number): Pass {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const seen = work();
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  if (seen !== count) throw new Error(`a pass saw ${seen} of ${count} entries; the benchmark is void`);
  return { eps: count / (ms / 1000), cpuUsPerEntry: (cpu.user + cpu.system) / count };
}

/** Decodes every body and reads every entry's fields; `read: false` only counts the entries. */
function decodeAll(bodies: readonly Buffer[], decode: Decoder, read = true): number {
  let seen = 0;
  let chars = 0;
  for (const body of bodies) {
    for (const s of decode(body)) {
      if (!read) {
        seen += s.entries.length;
        continue;
      }
      for (const e of s.entries) {
        seen++;
        if (e.timestampNs < 0n) chars--;
        chars += e.line.length;
        for (const k in e.metadata) chars += k.length + e.metadata[k]!.length;
      }
    }
  }
  if (read && chars === 0) throw new Error("the decoded entries hold no text; the benchmark is void");
  return seen;
}

function receiveAll(compressed: readonly Buffer[], decode: Decoder, store: AcceptedStore): number {
  store.clear();
  const limits = defaultIngestLimits(Date.now());
  for (const body of compressed) {
    const result = ingest(decode(unsnappy(body)), store, limits);
    if (result.status !== 204) throw new Error(`the receiver refused a push: ${result.body}`);
  }
  return store.accepted;
}

/** Median eps and CPU µs/entry per contender over interleaved rounds, and ours/protobufjs per round. */
function race(
  count: number,
  rounds: number,
  run: (decode: Decoder) => number,
): { oursEps: number; protobufjsEps: number; ratio: number; oursCpuUs: number; protobufjsCpuUs: number } {
  const contenders: Record<"ours" | "protobufjs", Decoder> = {
    ours: decodePushRequest,
    protobufjs: decodePushRequestReference,
  };
  for (const decode of Object.values(contenders)) pass(count, () => run(decode)); // warm-up
  const ours: Pass[] = [];
  const ref: Pass[] = [];
  for (let r = 0; r < rounds; r++) {
    ours.push(pass(count, () => run(contenders.ours)));
    ref.push(pass(count, () => run(contenders.protobufjs)));
  }
  const round3 = (x: number): number => Math.round(x * 1000) / 1000;
  return {
    oursEps: Math.round(median(ours.map((p) => p.eps))),
    protobufjsEps: Math.round(median(ref.map((p) => p.eps))),
    // Paired per round: both contenders of a round saw the same host.
    ratio: Math.round(median(ours.map((p, i) => p.eps / ref[i]!.eps)) * 100) / 100,
    oursCpuUs: round3(median(ours.map((p) => p.cpuUsPerEntry))),
    protobufjsCpuUs: round3(median(ref.map((p) => p.cpuUsPerEntry))),
  };
}

/**
 * The sink's push bodies for the corpus; the corpus itself is dropped, as the receiver never holds
 * it (a live 200 000-entry corpus would make every full GC here cost what it does not cost there).
 */
function pushBodies(n: number, batchSize: number): Buffer[] {
  const corpus = makeCorpus(n);
  const bodies: Buffer[] = [];
  for (let i = 0; i < n; i += batchSize)
    bodies.push(encodePushRequest(groupStreams(corpus.slice(i, i + batchSize))));
  return bodies;
}

if (import.meta.main) {
  const n = Number(process.argv[2] ?? 200_000);
  const batchSize = Number(process.argv[3] ?? 1000);
  const rounds = 5;
  const bodies = pushBodies(n, batchSize);
  const compressed = bodies.map((b) => snappy.compressSync(b, { copyOutputData: true }));
  const store = new AcceptedStore("counts", { trackNewest: false });
  const decode = race(n, rounds, (d) => decodeAll(bodies, d));
  const unread = race(n, rounds, (d) => decodeAll(bodies, d, d === decodePushRequestReference));
  const receive = race(n, rounds, (d) => receiveAll(compressed, d, store));
  console.log(
    JSON.stringify({
      bench: "loki-decode",
      entries: n,
      batchSize,
      rounds,
      decode: {
        oursEps: decode.oursEps,
        protobufjsEps: decode.protobufjsEps,
        ratio: decode.ratio,
        oursUnreadEps: unread.oursEps,
        unreadRatio: unread.ratio,
      },
      receive: {
        oursEps: receive.oursEps,
        protobufjsEps: receive.protobufjsEps,
        ratio: receive.ratio,
        oursCpuUsPerEntry: receive.oursCpuUs,
        protobufjsCpuUsPerEntry: receive.protobufjsCpuUs,
      },
    }),
  );
}
