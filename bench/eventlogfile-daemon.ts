// EventLogFile drain through the whole daemon: one file of N realistic-width rows from the simulated
// org (OAuth + REST) through createApp — EventLogFileSource, bulk lane, batching, the Loki sink
// (protobuf + snappy), file checkpoint store — into a Loki receiver, as a finite run (pollOnce). The
// org and the receiver each run in their own child process, so this process's CPU and RSS are the
// daemon's alone. The receiver decodes every push with the same decoder the test receiver uses and
// counts distinct REQUEST_IDs, so a run that loses or repeats a row is an error, not a figure.
//
// Usage: node bench/eventlogfile-daemon.ts [sizes...]    250 000 and 1 000 000 rows (or the sizes given,
//                                                       e.g. 250000 1000000 5000000), fresh process each
//        node bench/eventlogfile-daemon.ts --run <rows>  one measurement, JSON on stdout
// Each size runs with the V8 flags and environment bin/sf2loki.js gives the daemon (DAEMON_V8_FLAGS,
// DAEMON_ENV) and without any, so the JSON shows what they buy. Prints one JSON line.
//
// The measured process imports only what a daemon imports (the org and receiver code loads in the
// helper roles), but it runs the TypeScript sources: Node's type stripper adds ~30 MiB of RSS that the
// compiled image (dist/) does not carry; `baseline_rss_mib` is the process before the run.
import { forkRole, readBody } from "./roles.ts";
import { mib, startMeasure } from "./measure.ts";
import { fork, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createApp } from "../src/app.ts";
import { validateConfig } from "../src/config/load.ts";
import type { Config } from "../src/config/schema.ts";
import { DAEMON_ENV, DAEMON_V8_FLAGS } from "../src/v8-flags.ts";

const HERE = fileURLToPath(import.meta.url);
const SECRET = "bench-secret";

export interface DaemonDrainFigures {
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
  pushes: number;
}

export interface ReceiverStats {
  entries: number;
  unique: number;
  pushes: number;
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
  const stats: ReceiverStats = { entries: 0, unique: 0, pushes: 0 };
  const server = createServer((req, res) => {
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
  const config = validateConfig({
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
  });
  return {
    config,
    receiver: receiver.proc,
    close: () => {
      org.proc.disconnect();
      receiver.proc.disconnect();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function benchEventLogFileDaemon(rows: number): Promise<DaemonDrainFigures> {
  const rig = await startDrainRig(rows);
  const { config } = rig;
  try {
    const app = createApp(config, { pollOnce: true, noHealthServer: true });
    const baseline = process.memoryUsage.rss();
    const measure = startMeasure();
    await app.run(new AbortController().signal);
    const { seconds, cpu_seconds, peak_rss_mib, rssSamples: samples } = measure.stop();
    const got = await receiverStats(rig.receiver);
    if (got.entries !== rows || got.unique !== rows) {
      throw new Error(`receiver got ${got.entries} entries, ${got.unique} distinct ids; expected ${rows}`);
    }
    const quarter = (q: number): number =>
      mib(samples[Math.min(samples.length - 1, Math.floor((samples.length * q) / 4))] ?? 0);
    return {
      rows_per_s: Math.round(rows / seconds),
      seconds: Math.round(seconds * 100) / 100,
      peak_rss_mib,
      cpu_seconds,
      cpu_over_wall: Math.round((cpu_seconds / seconds) * 100) / 100,
      baseline_rss_mib: mib(baseline),
      load_avg_1m: Math.round(loadavg()[0]! * 100) / 100,
      rss_mib_by_quarter: [1, 2, 3, 4].map((q) => quarter(q === 4 ? 3.99 : q)),
      pushes: got.pushes,
    };
  } finally {
    rig.close();
  }
}

/** One measurement in a fresh process, so each size starts from the same heap. */
export async function daemonRunInChild(
  rows: number,
  execArgv: string[] = [],
  env: Record<string, string> = {},
): Promise<DaemonDrainFigures> {
  const proc = fork(HERE, ["--run", String(rows)], {
    execArgv,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  let out = "";
  proc.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => proc.once("exit", resolve));
  if (code !== 0) throw new Error(`daemon bench run for ${rows} rows exited with ${code}`);
  return JSON.parse(out) as DaemonDrainFigures;
}

if (process.argv[1] === HERE) {
  const [flag, arg] = process.argv.slice(2);
  if (flag === "--org") await serveOrg(Number(arg));
  else if (flag === "--receiver") await serveReceiver(Number(arg));
  else if (flag === "--run") {
    console.log(JSON.stringify(await benchEventLogFileDaemon(Number(arg))));
    process.exit(0);
  } else {
    const sizes = process.argv.slice(2).map(Number);
    const results: Record<string, DaemonDrainFigures> = {};
    for (const rows of sizes.length > 0 ? sizes : [250_000, 1_000_000]) {
      results[`${rows} daemon flags`] = await daemonRunInChild(rows, [...DAEMON_V8_FLAGS], { ...DAEMON_ENV });
      results[`${rows} no flags`] = await daemonRunInChild(rows);
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
        daemon_v8_flags: DAEMON_V8_FLAGS,
        daemon_env: DAEMON_ENV,
        ...flat,
        results,
      }),
    );
  }
}
