// `sf2loki backfill` of N rows vs the daemon's EventLogFile drain of the same N rows (bench/
// eventlogfile-daemon.ts): the same simulated org (one API file of N rows) and the same counting
// receiver, each in its own child process, each measurement in a fresh process. The receiver checks
// every row arrived exactly once, so a lossy or repeating run is an error, not a figure. The verdict
// is `backfill_over_daemon` (rows/s ratio; ≥ 1 means backfill is no slower).
//
// Usage: node bench/backfill.ts [rows]            default 1 000 000; prints one JSON object
//        node bench/backfill.ts --run <rows>      one backfill measurement, JSON on stdout
import { startMeasure } from "./measure.ts";
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parsePlan } from "../src/backfill/options.ts";
import { runBackfill } from "../src/backfill/run.ts";
import { systemClock } from "../src/util/clock.ts";
import {
  daemonRunInChild,
  receiverStats,
  startDrainRig,
  type DaemonDrainFigures,
} from "./eventlogfile-daemon.ts";

const HERE = fileURLToPath(import.meta.url);

interface BackfillFigures {
  rows_per_s: number;
  seconds: number;
  peak_rss_mib: number;
  cpu_seconds: number;
  pushes: number;
}

async function benchBackfill(rows: number): Promise<BackfillFigures> {
  // The drain bench's own org, receiver and config, so both sides meet identical peers.
  const rig = await startDrainRig(rows);
  const { config } = rig;
  try {
    const since = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
    // The sim's file is Hourly (the drain bench's daemon default interval).
    const plan = parsePlan({ since, interval: "Hourly", eventTypes: "API" });
    const measure = startMeasure();
    const outcome = await runBackfill({
      config,
      plan,
      io: { stdout: () => undefined, stderr: (t) => process.stderr.write(t), isTTY: false },
      clock: systemClock,
      signal: new AbortController().signal,
    });
    const { seconds, cpu_seconds, peak_rss_mib } = measure.stop();
    if (outcome !== "ok") throw new Error(`backfill ended ${outcome}`);
    const got = await receiverStats(rig.receiver);
    if (got.entries !== rows || got.unique !== rows) {
      throw new Error(`receiver got ${got.entries} entries, ${got.unique} distinct ids; expected ${rows}`);
    }
    return {
      rows_per_s: Math.round(rows / seconds),
      seconds: Math.round(seconds * 100) / 100,
      peak_rss_mib,
      cpu_seconds,
      pushes: got.pushes,
    };
  } finally {
    rig.close();
  }
}

async function backfillRunInChild(rows: number): Promise<BackfillFigures> {
  const proc = fork(HERE, ["--run", String(rows)], {
    execArgv: [],
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  let out = "";
  proc.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => proc.once("exit", resolve));
  if (code !== 0) throw new Error(`backfill bench run for ${rows} rows exited with ${code}`);
  return JSON.parse(out) as BackfillFigures;
}

/** Both sides, alternating, each in a fresh process; the ratio of the medians is the verdict. */
export async function benchBackfillVsDaemon(
  rows: number,
  rounds = 1,
): Promise<{
  backfill_over_daemon: number;
  cpu_backfill_over_daemon: number;
  backfill: BackfillFigures[];
  daemon: DaemonDrainFigures[];
}> {
  const backfill: BackfillFigures[] = [];
  const daemon: DaemonDrainFigures[] = [];
  for (let i = 0; i < rounds; i++) {
    daemon.push(await daemonRunInChild(rows));
    backfill.push(await backfillRunInChild(rows));
  }
  const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const ratio = med(backfill.map((b) => b.rows_per_s)) / med(daemon.map((d) => d.rows_per_s));
  // CPU seconds for the same rows: steadier than wall time on a shared host (< 1: backfill is cheaper).
  const cpu = med(backfill.map((b) => b.cpu_seconds)) / med(daemon.map((d) => d.cpu_seconds));
  return {
    backfill_over_daemon: Math.round(ratio * 100) / 100,
    cpu_backfill_over_daemon: Math.round(cpu * 100) / 100,
    backfill,
    daemon,
  };
}

if (process.argv[1] === HERE) {
  const [flag, arg] = process.argv.slice(2);
  if (flag === "--run") {
    console.log(JSON.stringify(await benchBackfill(Number(arg))));
    process.exit(0);
  }
  const rows = flag === undefined ? 1_000_000 : Number(flag);
  const rounds = Number(process.argv[3] ?? 1);
  console.log(
    JSON.stringify(
      { bench: "backfill_vs_daemon_drain", rows, ...(await benchBackfillVsDaemon(rows, rounds)) },
      null,
      2,
    ),
  );
}
