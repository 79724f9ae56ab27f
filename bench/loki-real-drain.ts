// An EventLogFile drain through the whole daemon into the real Grafana Loki 3.4.6 (#26): rows/s end to
// end, and the daemon's CPU beside Loki's, so capacity docs can say which one is the bottleneck. The
// simulated org runs in a child process (bench/eventlogfile-daemon.ts --org), the measured daemon in
// another (bench/daemon-drain.mjs), Loki as its own binary; this process reads each one's CPU from
// /proc. The tenant's ingestion limits are lifted, so the figure is Loki's and the daemon's work, not a
// configured rate. The rows are counted back with LogQL after a flush: a lost or repeated row is an
// error, not a figure. Not part of `npm run bench` (it needs ../shared/loki).
//
// With --otlp the daemon exports over OTLP to Loki's /otlp/v1/logs instead (#28); with --compare it
// drains the same rows both ways, one after the other, each into a fresh Loki, and reports the ratio.
//
// Usage: node bench/loki-real-drain.ts [--dist] [--otlp|--compare] [rows]   (default 1 000 000 rows)
import { execFile, fork } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { DAEMON_ENV, DAEMON_V8_FLAGS } from "../src/v8-flags.ts";
import { LOKI_SH, startRealLoki } from "../test/loki-real/support/real-loki.ts";
import { mib, startProcMeasure } from "./measure.ts";
import { daemonSays } from "./eventlogfile-daemon.ts";
import { forkRole } from "./roles.ts";

const ELF_BENCH = fileURLToPath(new URL("./eventlogfile-daemon.ts", import.meta.url));
const DAEMON = fileURLToPath(new URL("./daemon-drain.mjs", import.meta.url));
const TICKS_PER_S = 100;
const DAY_NS = 86_400_000_000_000n;

/** User + system CPU seconds a process has used so far, from /proc/<pid>/stat. */
function cpuSecondsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
}

type Wire = "loki" | "otlp";

/** The daemon's sink block for `wire`, into `loki` as `tenant`. */
function sinkOf(wire: Wire, loki: { url: string; pushUrl: string }, tenant: string): Record<string, unknown> {
  const shaping = { structured_metadata_fields: ["USER_ID", "CLIENT_IP"] };
  return wire === "loki"
    ? { loki: { url: loki.pushUrl, tenant_id: tenant, ...shaping } }
    : { type: "otlp", otlp: { url: `${loki.url}/otlp/v1/logs`, tenant_id: tenant }, loki: shaping };
}

async function drain(rows: number, entry: "dist" | "src", wire: Wire): Promise<Record<string, unknown>> {
  await promisify(execFile)("bash", ["-c", `test -f ${LOKI_SH}`]).catch(() => {
    throw new Error(`no real Loki at ${LOKI_SH}`);
  });
  const loki = await startRealLoki();
  const tenant = "drain";
  const lokiPid = Number(readFileSync(join(loki.dir, "loki.pid"), "utf8").trim());
  const org = await forkRole(ELF_BENCH, ["--org", String(rows)]);
  const dir = mkdtempSync(join(tmpdir(), "sf2loki-loki-drain-"));
  const daemon = fork(DAEMON, [entry], {
    execArgv: [...DAEMON_V8_FLAGS],
    env: { ...process.env, ...DAEMON_ENV },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  try {
    // Lifted far above what two cores can push: the figure is the work, not a configured rate.
    await loki.setLimits({
      [tenant]: {
        ingestion_rate_mb: 10_000,
        ingestion_burst_size_mb: 10_000,
        per_stream_rate_limit: "10GB",
        per_stream_rate_limit_burst: "10GB",
        // docs/otlp.md "Streams": OTLP records keyed by their stream, as the Loki sink's are.
        otlp_config: {
          resource_attributes: {
            attributes_config: [{ action: "index_label", attributes: ["sf2loki.stream"] }],
          },
        },
      },
    });
    const { salesforce } = org.ready as { salesforce: Record<string, unknown> };
    const ready = daemonSays<{ rss: number }>(daemon, "ready");
    daemon.send({
      salesforce,
      sources: { eventlogfile: { enabled: true, event_types: ["API"] } },
      sink: sinkOf(wire, loki, tenant),
      state: { file: { path: join(dir, "state.json") } },
    });
    await ready;
    const lokiCpu0 = cpuSecondsOf(lokiPid);
    const measure = startProcMeasure(daemon.pid!);
    const done = daemonSays<{ cpu_seconds: number }>(daemon, "done");
    daemon.send("go");
    const { cpu_seconds } = await done;
    const { seconds, peak_rss_mib } = measure.stop();
    const lokiCpu = cpuSecondsOf(lokiPid) - lokiCpu0;
    const lokiRss = mib(
      Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${lokiPid}/status`, "utf8"))?.[1] ?? 0) * 1024,
    );
    await loki.flush();
    const now = BigInt(Date.now()) * 1_000_000n;
    const stored = await loki
      .reader(tenant)
      .count(
        wire === "loki" ? '{event_type="API"}' : '{service_name="sf2loki"} | event_type="API"',
        now - 7n * DAY_NS,
        now + 60_000_000_000n,
      );
    if (stored !== rows) throw new Error(`Loki holds ${stored} rows by count_over_time; expected ${rows}`);
    return {
      entry,
      wire,
      rows,
      seconds: Math.round(seconds * 100) / 100,
      rows_per_s: Math.round(rows / seconds),
      daemon_cpu_seconds: Math.round(cpu_seconds * 100) / 100,
      daemon_cores: Math.round((cpu_seconds / seconds) * 100) / 100,
      daemon_peak_rss_mib: peak_rss_mib,
      loki_cpu_seconds: Math.round(lokiCpu * 100) / 100,
      loki_cores: Math.round((lokiCpu / seconds) * 100) / 100,
      loki_peak_rss_mib: lokiRss,
      /** Loki's CPU per second of the daemon's: above 1, Loki is the costlier side of the pipe. */
      loki_over_daemon_cpu: Math.round((lokiCpu / cpu_seconds) * 100) / 100,
      stored_by_count_over_time: stored,
      load_avg_1m: Math.round(loadavg()[0]! * 100) / 100,
    };
  } finally {
    if (daemon.connected) daemon.disconnect();
    if (daemon.exitCode === null && daemon.signalCode === null) await once(daemon, "exit");
    org.proc.disconnect();
    rmSync(dir, { recursive: true, force: true });
    await loki.stop();
  }
}

const args = process.argv.slice(2);
const rows = Number(args.find((a) => !a.startsWith("--")) ?? 1_000_000);
if (!Number.isInteger(rows) || rows < 1) {
  process.stderr.write("usage: node bench/loki-real-drain.ts [--dist] [--otlp|--compare] [rows]\n");
  process.exit(2);
}
const entry = args.includes("--dist") ? "dist" : "src";
if (args.includes("--compare")) {
  const loki = await drain(rows, entry, "loki");
  const otlp = await drain(rows, entry, "otlp");
  const ratio = Math.round(((otlp.rows_per_s as number) / (loki.rows_per_s as number)) * 100) / 100;
  process.stdout.write(
    `${JSON.stringify({ bench: "loki-real-drain", compare: { loki, otlp, otlp_over_loki_rows_per_s: ratio } })}\n`,
  );
} else {
  const wire: Wire = args.includes("--otlp") ? "otlp" : "loki";
  process.stdout.write(
    `${JSON.stringify({ bench: "loki-real-drain", ...(await drain(rows, entry, wire)) })}\n`,
  );
}
