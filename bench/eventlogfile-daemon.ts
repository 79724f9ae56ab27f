// EventLogFile drain through the whole daemon: one file of N realistic-width rows from the simulated
// org (OAuth + REST) through createApp — EventLogFileSource, bulk lane, batching, the Loki sink
// (protobuf + snappy), file checkpoint store — into a Loki receiver, as a finite run (pollOnce). The
// org and the receiver each run in their own child process, so this process's CPU and RSS are the
// daemon's alone. The receiver decodes every push with the same decoder the test receiver uses and
// counts distinct REQUEST_IDs, so a run that loses or repeats a row is an error, not a figure.
//
// Usage: node bench/eventlogfile-daemon.ts [--dist] [--flags-only] [--samples N] [sizes...]
//   sizes: rows per run, default 250 000 and 1 000 000 (e.g. 1000000 5000000 for #35's figure)
//   --flags-only: skip the runs without the daemon's V8 flags; --samples N: N alternating rounds,
//           each size's peak RSS is their median (peak_rss_<largest>_over_<smallest> compares them)
//   --dist: the measured daemon runs the compiled build (`npm run build` first), as the image does;
//           without it, the TypeScript sources, whose loader adds ~26 MiB of RSS no deployed daemon has.
// Each size runs with the V8 flags and environment bin/sf2loki.js gives the daemon (DAEMON_V8_FLAGS,
// DAEMON_ENV) and without any, so the JSON shows what they buy. Prints one JSON line.
//
// The measured daemon is a fresh process per run (bench/daemon-drain.mjs) that imports only what a
// daemon imports; this process owns the org and the receiver and reads the daemon's RSS from /proc
// (peak: the kernel's high-water mark). `baseline_rss_mib` is the daemon before the run.
import { forkRole, readBody } from "./roles.ts";
import { mib, startProcMeasure, vmMib } from "./measure.ts";
import { median } from "./sample.ts";
import { fork, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { answeredUnlessPush } from "./empty-lookups.ts";
import type { AddressInfo } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { memoryModel } from "../src/capacity.ts";
import { validateConfig } from "../src/config/load.ts";
import type { Config } from "../src/config/schema.ts";
import { DAEMON_ENV, DAEMON_V8_FLAGS } from "../src/v8-flags.ts";

const HERE = fileURLToPath(import.meta.url);
const DAEMON = fileURLToPath(new URL("./daemon-drain.mjs", import.meta.url));

/** What the measured daemon runs: the compiled build (as the image) or the TypeScript sources. */
export type DaemonEntry = "dist" | "src";
const SECRET = "bench-secret";

export interface DaemonDrainFigures {
  entry: DaemonEntry;
  rows_per_s: number;
  seconds: number;
  peak_rss_mib: number;
  cpu_seconds: number;
  /** CPU seconds over wall seconds: near 1 means the drain never waited idle (one core's worth). */
  cpu_over_wall: number;
  /** RSS of the process after its imports, before the run started. */
  baseline_rss_mib: number;
  /** The 1-minute load average at the end: above the core count, distrust the wall time. */
  load_avg_1m: number;
  /** RSS at a quarter, half, three quarters and the end of the run's wall time: flat is the goal. */
  rss_mib_by_quarter: number[];
  /**
   * The JS heap still in use after a full collection, before the run and after it: what the daemon
   * retains. The same after 1M and 5M rows means nothing is kept per row; RSS above it is heap sizing.
   */
  heap_live_before_mib: number;
  heap_live_after_mib: number;
  /** Peaks over the run (sampled every 50 ms in the daemon): V8's reserved and used heap, Buffers. */
  peak_heap_total_mib: number;
  peak_heap_used_mib: number;
  peak_external_mib: number;
  peak_array_buffers_mib: number;
  /**
   * Peaks of the RSS's two parts (sampled every 20 ms): the process's own memory, and the pages of the
   * node binary and libraries it touched (shared, reclaimable; more code paths run, more pages).
   */
  peak_rss_anon_mib: number;
  peak_rss_file_mib: number;
  /** What src/capacity.ts predicts as this config's peak RSS (docs/capacity.md): the bound to stay under. */
  model_total_mib: number;
  pushes: number;
}

export interface ReceiverStats {
  entries: number;
  unique: number;
  pushes: number;
  /** Lookups the daemon made (query_range), answered empty. */
  queries: number;
}

/**
 * Seconds the EventLogFile CSV parser alone takes over `rows` rows of the sim's API file (the same
 * generator, columns and chunking the org serves): only the parser's calls are timed.
 */
async function parserSeconds(rows: number): Promise<number> {
  const { CsvParser } = await import("../src/salesforce/eventlogfile/csv-parser.ts");
  const { csvStream } = await import("../src/sim/salesforce-rest/elf-csv.ts");
  const parser = new CsvParser({ maxFieldChars: 1_048_576, maxRecordChars: 16 * 1_048_576 });
  const shape = { eventType: "API", rows, startMs: Date.now() - 600_000, spanMs: 86_400_000, seed: 1 };
  let out: string[][] = [];
  let parsed = 0;
  let spent = 0;
  for await (const chunk of csvStream(shape)) {
    const t0 = performance.now();
    parser.write(chunk as Buffer, out);
    spent += performance.now() - t0;
    parsed += out.length;
    out = [];
  }
  parser.end(out);
  parsed += out.length;
  if (parsed !== rows + 1) throw new Error(`the parser read ${parsed} records of ${rows + 1}`);
  return spent / 1000;
}

/** The simulated org holding one API file of `rows` rows, created 10 minutes ago (past the settle window). */
async function serveOrg(rows: number): Promise<void> {
  const [{ startSimOrg }, { simSalesforceConfig }] = await Promise.all([
    import("../src/sim/salesforce/index.ts"),
    import("../src/sim/demo-polling.ts"),
  ]);
  const org = await startSimOrg({ clientSecret: SECRET, polling: { eventLogFiles: { API: { rows } } } });
  process.send?.({ salesforce: simSalesforceConfig(org, SECRET) });
  process.once("disconnect", () => {
    void org.stop().then(() => process.exit(0));
  });
}

/**
 * A Loki push endpoint that decodes every body and counts entries and distinct REQUEST_IDs
 * (`sim-API-<n>`, n < rows: one bit each).
 */
async function serveReceiver(rows: number): Promise<void> {
  const { decodePushBody } = await import("../src/sim/loki-decode.ts");
  const seen = new Uint8Array(rows);
  const stats: ReceiverStats = { entries: 0, unique: 0, pushes: 0, queries: 0 };
  const server = createServer((req, res) => {
    if (answeredUnlessPush(req, res)) {
      stats.queries++;
      return;
    }
    void readBody(req).then((body) => {
      const streams = decodePushBody(
        body,
        req.headers["content-type"],
        req.headers["content-encoding"],
        64 * 2 ** 20,
      );
      stats.pushes++;
      for (const s of streams) {
        for (const e of s.entries) {
          stats.entries++;
          const at = e.line.indexOf('"REQUEST_ID": "sim-API-');
          if (at < 0) continue;
          const n = Number.parseInt(e.line.slice(at + 23, e.line.indexOf('"', at + 23)), 10);
          if (n >= 0 && n < rows && seen[n] === 0) {
            seen[n] = 1;
            stats.unique++;
          }
        }
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  process.on("message", () => {
    process.send?.(stats);
  });
  process.send?.({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/loki/api/v1/push` });
  process.once("disconnect", () => {
    server.close();
    process.exit(0);
  });
}

export async function receiverStats(receiver: ChildProcess): Promise<ReceiverStats> {
  const reply = new Promise<ReceiverStats>((resolve) =>
    receiver.once("message", (m) => {
      resolve(m as ReceiverStats);
    }),
  );
  receiver.send("stats");
  return reply;
}

/** The org and the receiver (each a child process) and the config a run against them uses. */
export interface DrainRig {
  config: Config;
  /** The same config before validation, as a daemon in another process is given it. */
  raw: Record<string, unknown>;
  receiver: ChildProcess;
  close(): void;
}

/** Shared with bench/backfill.ts, so the daemon and the backfill meet identical peers and config. */
export async function startDrainRig(rows: number): Promise<DrainRig> {
  const org = await forkRole(HERE, ["--org", String(rows)]);
  const receiver = await forkRole(HERE, ["--receiver", String(rows)]);
  const { salesforce } = org.ready as { salesforce: Record<string, unknown> };
  const { url } = receiver.ready as { url: string };
  const dir = mkdtempSync(join(tmpdir(), "sf2loki-bench-"));
  const raw = {
    salesforce,
    sources: { eventlogfile: { enabled: true, event_types: ["API"] } },
    sink: {
      loki: {
        url,
        structured_metadata_fields: ["USER_ID", "CLIENT_IP"],
        ...(process.env.QMAX ? { batch: { queue_maxsize: Number(process.env.QMAX) } } : {}),
      },
    },
    state: { file: { path: join(dir, "state.json") } },
  };
  return {
    config: validateConfig(raw),
    raw,
    receiver: receiver.proc,
    close: () => {
      org.proc.disconnect();
      receiver.proc.disconnect();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The next message of the measured daemon in `phase`; rejects if it exits first. */
export function daemonSays<T>(daemon: ChildProcess, phase: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onExit = (code: number | null): void => {
      reject(new Error(`the measured daemon exited with ${code} before "${phase}"`));
    };
    const onMessage = (m: { phase?: string }): void => {
      if (m.phase !== phase) return;
      daemon.off("message", onMessage).off("exit", onExit);
      resolve(m as T);
    };
    daemon.on("message", onMessage).once("exit", onExit);
  });
}

/**
 * One drain of `rows` rows through a fresh daemon process started on `entry` with `execArgv` and `env`,
 * checked at the receiver: a run that loses or repeats a row throws instead of returning a figure.
 */
export async function daemonRunInChild(
  rows: number,
  execArgv: string[] = [],
  env: Record<string, string> = {},
  entry: DaemonEntry = "src",
): Promise<DaemonDrainFigures> {
  const rig = await startDrainRig(rows);
  const daemon = fork(DAEMON, [entry], {
    // --expose-gc only lets the daemon collect before it reports its live heap; it sizes nothing.
    execArgv: [...execArgv, "--expose-gc"],
    env: { ...process.env, ...env },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  try {
    const ready = daemonSays<{ rss: number; heap: number }>(daemon, "ready");
    daemon.send(rig.raw);
    const { rss: baseline, heap: heapBefore } = await ready;
    const measure = startProcMeasure(daemon.pid!);
    const parts = { anon: 0, file: 0 };
    const partSampler = setInterval(() => {
      parts.anon = Math.max(parts.anon, vmMib(daemon.pid!, "RssAnon"));
      parts.file = Math.max(parts.file, vmMib(daemon.pid!, "RssFile"));
    }, 20);
    const done = daemonSays<{
      cpu_seconds: number;
      heap: number;
      peaks: { heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };
    }>(daemon, "done");
    daemon.send("go");
    const { cpu_seconds, heap: heapAfter, peaks } = await done;
    const { seconds, peak_rss_mib, rssSamples: samples } = measure.stop();
    clearInterval(partSampler);
    const got = await receiverStats(rig.receiver);
    if (got.entries !== rows || got.unique !== rows) {
      throw new Error(`receiver got ${got.entries} entries, ${got.unique} distinct ids; expected ${rows}`);
    }
    const quarter = (q: number): number =>
      mib(samples[Math.min(samples.length - 1, Math.floor((samples.length * q) / 4))] ?? 0);
    return {
      entry,
      rows_per_s: Math.round(rows / seconds),
      seconds: Math.round(seconds * 100) / 100,
      peak_rss_mib,
      cpu_seconds: Math.round(cpu_seconds * 100) / 100,
      cpu_over_wall: Math.round((cpu_seconds / seconds) * 100) / 100,
      baseline_rss_mib: mib(baseline),
      load_avg_1m: Math.round(loadavg()[0]! * 100) / 100,
      rss_mib_by_quarter: [1, 2, 3, 4].map((q) => quarter(q === 4 ? 3.99 : q)),
      heap_live_before_mib: mib(heapBefore),
      heap_live_after_mib: mib(heapAfter),
      peak_heap_total_mib: mib(peaks.heapTotal),
      peak_heap_used_mib: mib(peaks.heapUsed),
      peak_external_mib: mib(peaks.external),
      peak_array_buffers_mib: mib(peaks.arrayBuffers),
      peak_rss_anon_mib: parts.anon,
      peak_rss_file_mib: parts.file,
      model_total_mib: memoryModel(rig.config, { fromSource: entry === "src" }).total_mib,
      pushes: got.pushes,
    };
  } finally {
    // A clean exit, so a daemon started with --cpu-prof or --heap-prof writes its profile.
    if (daemon.connected) daemon.disconnect();
    const exited = once(daemon, "exit");
    const timer = setTimeout(() => daemon.kill(), 10_000);
    if (daemon.exitCode === null && daemon.signalCode === null) await exited;
    clearTimeout(timer);
    rig.close();
  }
}

if (process.argv[1] === HERE) {
  const [flag, arg] = process.argv.slice(2);
  if (flag === "--org") await serveOrg(Number(arg));
  else if (flag === "--receiver") await serveReceiver(Number(arg));
  else {
    const args = process.argv.slice(2);
    const entry: DaemonEntry = args.includes("--dist") ? "dist" : "src";
    const flagsOnly = args.includes("--flags-only");
    const samplesAt = args.indexOf("--samples");
    const samples = samplesAt >= 0 ? Number(args[samplesAt + 1]) : 1;
    const sizes = args
      .filter((a, i) => !a.startsWith("--") && (samplesAt < 0 || i !== samplesAt + 1))
      .map(Number);
    if (sizes.some((n) => !Number.isInteger(n) || n < 1) || !Number.isInteger(samples) || samples < 1) {
      process.stderr.write(
        "usage: node bench/eventlogfile-daemon.ts [--dist] [--flags-only] [--samples N] [rows...]\n",
      );
      process.exit(2);
    }
    const results: Record<string, DaemonDrainFigures> = {};
    const runSizes = sizes.length > 0 ? sizes : [250_000, 1_000_000];
    // Peak RSS is the worst moment of a run, so one run per size says little: the sizes alternate for
    // `--samples N` rounds and each size's median peak is the figure (results hold the last round).
    const peaks = new Map<number, number[]>();
    const anonPeaks = new Map<number, number[]>();
    for (let round = 0; round < samples; round++) {
      for (const rows of runSizes) {
        const figures = await daemonRunInChild(rows, [...DAEMON_V8_FLAGS], { ...DAEMON_ENV }, entry);
        results[`${rows} daemon flags`] = figures;
        peaks.set(rows, [...(peaks.get(rows) ?? []), figures.peak_rss_mib]);
        anonPeaks.set(rows, [...(anonPeaks.get(rows) ?? []), figures.peak_rss_anon_mib]);
        if (!flagsOnly && round === 0)
          results[`${rows} no flags`] = await daemonRunInChild(rows, [], {}, entry);
      }
    }
    const medians: Record<string, number | number[]> = {};
    for (const [rows, list] of anonPeaks) {
      medians[`flags_${rows}_peak_rss_anon_samples_mib`] = list;
      medians[`flags_${rows}_median_peak_rss_anon_mib`] = median(list);
    }
    for (const [rows, list] of peaks) {
      medians[`flags_${rows}_peak_rss_samples_mib`] = list;
      medians[`flags_${rows}_median_peak_rss_mib`] = median(list);
    }
    const [smallest, largest] = [Math.min(...runSizes), Math.max(...runSizes)];
    if (largest > smallest) {
      const ratio = (of: Map<number, number[]>): number =>
        Math.round((median(of.get(largest)!) / median(of.get(smallest)!)) * 1000) / 1000;
      medians[`peak_rss_${largest}_over_${smallest}`] = ratio(peaks);
      medians[`peak_rss_anon_${largest}_over_${smallest}`] = ratio(anonPeaks);
    }
    // The reference on the same input: the CSV parser alone over the same generated rows, in this run
    // (after a warm-up, so the first size does not pay for the parser's compilation).
    const parser: Record<string, number> = {};
    await parserSeconds(100_000);
    for (const rows of runSizes) {
      const seconds = await parserSeconds(rows);
      parser[`parser_${rows}_seconds`] = Math.round(seconds * 100) / 100;
      const drain = results[`${rows} daemon flags`]!.seconds;
      parser[`flags_${rows}_drain_over_parser`] = Math.round((drain / seconds) * 100) / 100;
    }
    // Also flat (`flags_1000000_peak_rss_mib`, `none_250000_cpu_seconds`, ...) for bench/run.ts, which
    // reads top-level numeric fields.
    const flat: Record<string, number> = {};
    for (const [label, figures] of Object.entries(results)) {
      const [rows, variant] = label.split(" ");
      for (const [field, value] of Object.entries(figures)) {
        if (typeof value === "number")
          flat[`${variant === "daemon" ? "flags" : "none"}_${rows}_${field}`] = value;
      }
    }
    console.log(
      JSON.stringify({
        bench: "eventlogfile_daemon_drain",
        entry,
        daemon_v8_flags: DAEMON_V8_FLAGS,
        daemon_env: DAEMON_ENV,
        ...flat,
        ...parser,
        ...medians,
        results,
      }),
    );
  }
}
