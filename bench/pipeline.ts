// End-to-end data-path benchmark pieces (spec B §7, carried through to the real sink): a flooding
// source, the real Pipeline, the real LokiSink (protobuf+snappy over undici) and a receiver on
// 127.0.0.1. Pipeline and sink record into the daemon's own metrics registry (createMetrics), as every
// daemon does: there is no daemon without /metrics.
//
// Receivers: the simulated Loki (src/sim/loki.ts) in this process or in a child process (so its
// decode and store work does not share the pipeline's event loop), and a "drain" child that only
// reads each body and answers 204: the figure our side reaches when the receiver costs nothing.
//
// As a script this file plays the child roles bench/run.ts needs:
//   node bench/pipeline.ts --receiver loki|drain          a receiver steered over IPC
//   node bench/pipeline.ts --rss prebuilt|streamed         waits for a push URL and a count over
//                                                          IPC, runs one e2e pass, reports peak RSS
import { fork, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import type { LogEntry } from "../src/model.ts";
import { Pipeline } from "../src/pipeline/pipeline.ts";
import { DEFAULT_BATCH_SETTINGS, type BatchSettings } from "../src/pipeline/settings.ts";
import { createMetrics } from "../src/obs/metrics.ts";
import { createLokiSink } from "../src/sinks/loki/sink.ts";
import type { LokiLimits } from "../src/sinks/receiving-loki/limits.ts";
import type { Sink } from "../src/sinks/sink.ts";
import { PUSH_PATH, startLokiReceiver } from "../src/sim/loki.ts";
import { MemoryStore, ScriptedSource } from "../test/support/fakes.ts";
import { makeCorpus, SOURCE_RUN } from "./codec.ts";
import { timedWindow, total } from "./sample.ts";

/**
 * The §7 settings, as bench/pipeline-noop.ts runs them: 1000 entries / 4 MB batches, 1 s interval,
 * 10 000 entries / 256 MiB per lane. Only max_bytes differs from the defaults; max_in_flight stays 4.
 */
export const E2E_BATCH: BatchSettings = { ...DEFAULT_BATCH_SETTINGS, max_bytes: 4_000_000 };

export type ReceiverKind = "loki" | "drain";

export interface ReceiverCounts {
  /** Entries accepted since the last reset; undefined for the drain receiver, which never decodes. */
  accepted: number | undefined;
  requests: number;
  /** CPU time (user + system, µs) the receiver's process has used so far; undefined in-process. */
  cpuMicros: number | undefined;
}

/** What a benchmark needs of a receiver, wherever it runs. */
export interface BenchReceiver {
  readonly pushUrl: string;
  /** Sent as X-Scope-OrgID (a multi-tenant Loki); unset: none. */
  readonly tenant?: string;
  setLatency(ms: number): Promise<void>;
  /** Forgets accepted entries (so memory does not pile up across passes) and clears faults. */
  reset(): Promise<void>;
  counts(): Promise<ReceiverCounts>;
  stop(): Promise<void>;
  /** Aborts if the receiver dies, so a pass stops instead of retrying pushes forever. */
  readonly lost: AbortSignal;
}

export async function startInProcessReceiver(): Promise<BenchReceiver> {
  // Counts only: the receiver still decodes and validates every push, but keeps no entries, so the
  // benchmark measures sf2loki rather than the simulated Loki's store.
  const receiver = await startLokiReceiver({ keepRequests: 0, retain: "counts" });
  return {
    pushUrl: receiver.pushUrl,
    setLatency: (ms) => {
      receiver.faults.setLatency(ms);
      return Promise.resolve();
    },
    reset: () => {
      receiver.reset();
      return Promise.resolve();
    },
    counts: () => {
      const { accepted, requests } = receiver.counts;
      return Promise.resolve({ accepted, requests, cpuMicros: undefined });
    },
    stop: () => receiver.stop(),
    lost: new AbortController().signal,
  };
}

/** Reads each push body to the end and answers 204: no decode, no store, no latency. */
async function startDrainReceiver(): Promise<BenchReceiver> {
  let requests = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.once("end", () => {
      requests++;
      res.writeHead(204).end();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    pushUrl: `http://127.0.0.1:${port}${PUSH_PATH}`,
    setLatency: () => Promise.reject(new Error("the drain receiver has no latency fault")),
    reset: () => {
      requests = 0;
      return Promise.resolve();
    },
    counts: () => Promise.resolve({ accepted: undefined, requests, cpuMicros: undefined }),
    lost: new AbortController().signal,
    stop: async () => {
      const closed = once(server, "close");
      server.close();
      server.closeAllConnections();
      await closed;
    },
  };
}

// ------------------------------------------------------------------ receiver child over IPC

type ReceiverRequest = { op: "latency"; ms: number } | { op: "reset" | "counts" | "stop" };
type ReceiverCommand = ReceiverRequest & { id: number };

interface ReceiverReply {
  id: number;
  result?: unknown;
  error?: string;
}

const SELF = fileURLToPath(import.meta.url);

function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/** The child's first IPC message; rejects if the child exits without sending one. */
/** The first IPC message from `peer` (a child, or this process's channel to its parent). */
function firstMessage<T>(peer: ChildProcess | NodeJS.Process, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const gone = (): void => {
      reject(new Error(`${what} went away before reporting`));
    };
    peer.once("message", (message: unknown) => {
      resolve(message as T);
    });
    if (peer === process) peer.once("disconnect", gone);
    else peer.once("exit", gone);
  });
}

/** A receiver in a child process: its work runs on the other core, not on the pipeline's loop. */
export async function startChildReceiver(kind: ReceiverKind): Promise<BenchReceiver> {
  const child = fork(SELF, ["--receiver", kind], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const ready = await firstMessage<{ pushUrl: string }>(child, `${kind} receiver child`);
  let nextId = 0;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  child.on("message", (reply: ReceiverReply) => {
    const waiter = pending.get(reply.id);
    pending.delete(reply.id);
    if (reply.error !== undefined) waiter?.reject(new Error(reply.error));
    else waiter?.resolve(reply.result);
  });
  const lost = new AbortController();
  child.on("exit", (code) => {
    const err = new Error(`${kind} receiver child exited with code ${code}`);
    lost.abort(err);
    for (const waiter of pending.values()) waiter.reject(err);
    pending.clear();
  });
  const call = (command: ReceiverRequest): Promise<unknown> => {
    if (!child.connected) return Promise.reject(new Error(`${kind} receiver child is gone`));
    const id = nextId++;
    const { promise, resolve, reject } = Promise.withResolvers<unknown>();
    pending.set(id, { resolve, reject });
    child.send({ ...command, id });
    return promise;
  };
  return {
    pushUrl: ready.pushUrl,
    lost: lost.signal,
    setLatency: async (ms) => {
      await call({ op: "latency", ms });
    },
    reset: async () => {
      await call({ op: "reset" });
    },
    counts: async () => (await call({ op: "counts" })) as ReceiverCounts,
    stop: async () => {
      const exited = once(child, "exit");
      await call({ op: "stop" });
      await exited;
    },
  };
}

async function serveReceiverOverIpc(kind: ReceiverKind): Promise<void> {
  const receiver = kind === "loki" ? await startInProcessReceiver() : await startDrainReceiver();
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopped ??= receiver.stop());
  // A parent that died without saying stop must not leave a listening server behind.
  process.once("disconnect", () => void stop());
  const perform = (cmd: ReceiverCommand): Promise<unknown> => {
    switch (cmd.op) {
      case "latency":
        return receiver.setLatency(cmd.ms);
      case "reset":
        return receiver.reset();
      case "counts":
        return receiver.counts().then((c) => ({ ...c, cpuMicros: cpuMicros() }));
      case "stop":
        return stop();
    }
  };
  process.on("message", (cmd: ReceiverCommand) => {
    perform(cmd).then(
      (result) => {
        process.send?.({ id: cmd.id, result } satisfies ReceiverReply);
        if (cmd.op === "stop") process.disconnect();
      },
      (err: unknown) => {
        process.send?.({ id: cmd.id, error: String(err) } satisfies ReceiverReply);
      },
    );
  });
  process.send?.({ pushUrl: receiver.pushUrl });
}

// ------------------------------------------------------------------ one e2e pass

export interface E2eResult {
  entries: number;
  ms: number;
  eps: number;
  requests: number;
  /**
   * CPU ms this process (pipeline, sink, undici, snappy's worker threads) and the receiver's
   * process used during the pass. Next to `ms` they say which side is saturated: a side whose
   * CPU time is close to the wall time is the bottleneck. Receiver's is undefined in-process.
   */
  sender_cpu_ms: number;
  receiver_cpu_ms: number | undefined;
}

/** One registry for the process's passes, as a daemon has one for its life. */
let metrics: ReturnType<typeof createMetrics> | undefined;

/** Source → Pipeline → LokiSink (protobuf+snappy) → `pushUrl`, with an in-memory store. */
function buildRig(
  entries: Iterable<LogEntry>,
  pushUrl: string,
  batch: BatchSettings,
  lost?: AbortSignal,
  limits?: LokiLimits,
  tenant?: string,
) {
  const meter = (metrics ??= createMetrics({ version: "bench" })).meter;
  const sink = createLokiSink(
    {
      url: pushUrl,
      encoding: "protobuf",
      compression: "snappy",
      labels: {},
      batch: { max_line_bytes: batch.max_line_bytes },
      ...(limits ? { limits } : {}),
      ...(tenant === undefined ? {} : { tenant_id: tenant }),
    },
    { meter },
  );
  const store = new MemoryStore();
  const pipeline = new Pipeline({
    sources: [new ScriptedSource("eventlog_objects", entries, { runSize: SOURCE_RUN })],
    sink,
    store,
    batch,
    shutdown_grace_ms: 1000,
    meter,
  });
  return { store, run: () => timedRun(pipeline, sink, lost ?? new AbortController().signal) };
}

/** Wall and CPU ms from run() to the last commit; the sink's pool is closed after, untimed. */
async function timedRun(
  pipeline: Pipeline,
  sink: Sink,
  signal: AbortSignal,
): Promise<{ ms: number; cpuMs: number }> {
  const cpu0 = cpuMicros();
  const t0 = performance.now();
  try {
    await pipeline.run(signal);
    return { ms: performance.now() - t0, cpuMs: (cpuMicros() - cpu0) / 1000 };
  } finally {
    await sink.close();
  }
}

const perSecond = (count: number, ms: number): number => Math.round(count / (ms / 1000));

/**
 * One pass of `entries` through Pipeline → LokiSink → HTTP → `receiver`, timed from run() to the
 * last commit, with `latencyMs` added to every receiver response. Throws unless the receiver
 * accepted every entry (when it can tell) and the store holds the last entry's checkpoint, so a
 * fast figure is a real one.
 */
export async function e2ePass(
  entries: readonly LogEntry[],
  receiver: BenchReceiver,
  batch: Partial<BatchSettings> = {},
  latencyMs = 0,
  limits?: LokiLimits,
): Promise<E2eResult> {
  await receiver.reset(); // also clears faults, so the latency is set after it
  if (latencyMs > 0) await receiver.setLatency(latencyMs);
  const rig = buildRig(
    entries,
    receiver.pushUrl,
    { ...E2E_BATCH, ...batch },
    receiver.lost,
    limits,
    receiver.tenant,
  );
  const before = await receiver.counts();
  const { ms, cpuMs } = await rig.run();
  const { accepted, requests, cpuMicros: receiverCpu } = await receiver.counts();
  const last = entries.at(-1)?.checkpoint;
  if (
    (accepted ?? entries.length) !== entries.length ||
    (last && rig.store.doc.get(last.key) !== last.value)
  ) {
    throw new Error(`receiver accepted ${accepted} of ${entries.length} entries; the benchmark is void`);
  }
  return {
    entries: entries.length,
    ms: Math.round(ms),
    eps: perSecond(entries.length, ms),
    requests,
    sender_cpu_ms: Math.round(cpuMs),
    receiver_cpu_ms:
      receiverCpu === undefined || before.cpuMicros === undefined
        ? undefined
        : Math.round((receiverCpu - before.cpuMicros) / 1000),
  };
}

/** One timed window of back-to-back e2e passes (bench/sample.ts), added up. */
export interface E2eWindow {
  entries: number;
  ms: number;
  eps: number;
  passes: number;
  /** Push requests the receiver counted over the window. */
  requests: number;
  sender_cpu_ms: number;
  receiver_cpu_ms: number | undefined;
  /** CPU µs per entry on each side: steadier than entries/s on a loaded host (no waiting counted). */
  sender_cpu_us_per_entry: number;
  receiver_cpu_us_per_entry: number | undefined;
}

/**
 * e2e passes of `entries` back to back until their timed ms add up to `minMs`; entries/s and CPU
 * per entry over the whole window. Every pass is checked as e2ePass checks it.
 */
export async function e2eWindow(
  entries: readonly LogEntry[],
  receiver: BenchReceiver,
  minMs: number,
  batch: Partial<BatchSettings> = {},
  latencyMs = 0,
  limits?: LokiLimits,
): Promise<E2eWindow> {
  return e2eWindowOf(await timedWindow(minMs, () => e2ePass(entries, receiver, batch, latencyMs, limits)));
}

/** A window's figures from its passes, added up. */
export function e2eWindowOf(passes: readonly E2eResult[]): E2eWindow {
  const count = total(passes, (p) => p.entries);
  const ms = total(passes, (p) => p.ms);
  const senderCpu = total(passes, (p) => p.sender_cpu_ms);
  const receiverCpu = passes.some((p) => p.receiver_cpu_ms === undefined)
    ? undefined
    : total(passes, (p) => p.receiver_cpu_ms!);
  const perEntryUs = (cpuMs: number): number => Math.round(((cpuMs * 1000) / count) * 1000) / 1000;
  return {
    entries: count,
    ms,
    eps: perSecond(count, ms),
    passes: passes.length,
    requests: total(passes, (p) => p.requests),
    sender_cpu_ms: senderCpu,
    receiver_cpu_ms: receiverCpu,
    sender_cpu_us_per_entry: perEntryUs(senderCpu),
    receiver_cpu_us_per_entry: receiverCpu === undefined ? undefined : perEntryUs(receiverCpu),
  };
}

// ------------------------------------------------------------------ clean peak RSS

/**
 * How the RSS child gets its entries. `prebuilt`: the whole corpus in memory first, as the timed
 * passes have it. `streamed`: 1000-entry corpus chunks made as the pipeline pulls them, as a real
 * source produces them, so the figure is the data path's own footprint and not its input's.
 */
export type RssCorpus = "prebuilt" | "streamed";

export interface RssResult {
  /** maxRSS of a fresh process that pushed `count` entries once end to end. */
  peak_rss_mib: number;
  /** maxRSS before the pipeline started (modules loaded, pre-built corpus made). */
  before_pass_mib: number;
  /** The kernel's VmHWM for the same process (Linux only): a cross-check of maxRSS. */
  vmhwm_mib: number | undefined;
  eps: number;
}

function maxRssMib(): number {
  return Math.round(process.resourceUsage().maxRSS / 1024);
}

function vmHwmMib(): number | undefined {
  try {
    const kb = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
    return kb === undefined ? undefined : Math.round(Number(kb) / 1024);
  } catch {
    return undefined;
  }
}

export interface RssProbe {
  /**
   * One e2e pass of `count` entries in the probe's process against `receiver` (which must live in
   * another process); checks here that every entry arrived. Once per probe. The child exits when
   * this process does, so an abandoned probe does not outlive the benchmark.
   */
  measure(receiver: BenchReceiver, count: number): Promise<RssResult>;
}

/**
 * Forks the measuring child now and leaves it waiting. Fork it while this process is still small:
 * Linux carries the parent's RSS at fork time into the child's maxRSS (the copied address space is
 * counted before exec replaces it), so a child forked from a grown benchmark process would report
 * the parent's size instead of its own.
 */
export async function forkRssProbe(corpus: RssCorpus): Promise<RssProbe> {
  const child = fork(SELF, ["--rss", corpus], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  await firstMessage<"ready">(child, "RSS child");
  return {
    async measure(receiver, count) {
      await receiver.reset();
      const exited = once(child, "exit");
      const reported = firstMessage<RssResult>(child, "RSS child");
      child.send({ pushUrl: receiver.pushUrl, count });
      const result = await reported;
      await exited;
      const { accepted } = await receiver.counts();
      if (accepted !== count) {
        throw new Error(`receiver accepted ${accepted} of ${count} entries from the RSS child`);
      }
      return result;
    },
  };
}

const CHUNK = 1000;

/** makeCorpus entries a chunk at a time, timestamps moved on per chunk so every entry is distinct. */
function* streamedCorpus(count: number): Generator<LogEntry> {
  for (let done = 0; done < count; done += CHUNK) {
    const shiftNs = BigInt(done) * 1_000_000n;
    for (const entry of makeCorpus(Math.min(CHUNK, count - done))) {
      entry.timestampNs += shiftNs;
      yield entry;
    }
  }
}

async function rssChild(corpus: RssCorpus): Promise<void> {
  const job = firstMessage<{ pushUrl: string; count: number }>(process, "parent");
  process.send?.("ready");
  const { pushUrl, count } = await job;
  const entries = corpus === "prebuilt" ? makeCorpus(count) : streamedCorpus(count);
  const before = maxRssMib();
  // The parent checks the receiver's count, so a run cut short cannot pass as a result.
  const { ms } = await buildRig(entries, pushUrl, E2E_BATCH).run();
  const result: RssResult = {
    peak_rss_mib: maxRssMib(),
    before_pass_mib: before,
    vmhwm_mib: vmHwmMib(),
    eps: perSecond(count, ms),
  };
  process.send?.(result);
  process.disconnect();
}

if (import.meta.main) {
  const [role, ...rest] = process.argv.slice(2);
  if (role === "--receiver" && (rest[0] === "loki" || rest[0] === "drain"))
    await serveReceiverOverIpc(rest[0]);
  else if (role === "--rss" && (rest[0] === "prebuilt" || rest[0] === "streamed")) await rssChild(rest[0]);
  else {
    process.stderr.write("usage: node bench/pipeline.ts --receiver loki|drain | --rss prebuilt|streamed\n");
    process.exitCode = 2;
  }
}
