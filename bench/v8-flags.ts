// The V8 flag trade on the EventLogFile drain: the same N-row drain through the whole daemon
// (bench/eventlogfile-daemon.ts, a fresh process per run) under each flag set given, with the
// daemon's environment (MALLOC_ARENA_MAX=1). One JSON line per run: wall, CPU and peak RSS. How
// docs/capacity.md's "V8 flags" table was measured; re-run it before changing src/v8-flags.ts.
//
// Usage: node bench/v8-flags.ts [rows=1000000] ['[["--max-semi-space-size=8", ...], [...]]']
//        (default: the daemon's flags, then none)
import { DAEMON_ENV, DAEMON_V8_FLAGS } from "../src/v8-flags.ts";
import { daemonRunInChild } from "./eventlogfile-daemon.ts";

const rows = Number(process.argv[2] ?? 1_000_000);
const sets = process.argv[3] ? (JSON.parse(process.argv[3]) as string[][]) : [[...DAEMON_V8_FLAGS], []];
if (!Number.isInteger(rows) || rows < 1 || !Array.isArray(sets)) {
  process.stderr.write("usage: node bench/v8-flags.ts [rows] ['[[\"--flag=1\"], []]']\n");
  process.exit(2);
}
for (const flags of sets) {
  const r = await daemonRunInChild(rows, flags, { ...DAEMON_ENV });
  console.log(
    JSON.stringify({
      flags: flags.join(" ") || "(none)",
      rows,
      seconds: r.seconds,
      cpu_seconds: r.cpu_seconds,
      peak_rss_mib: r.peak_rss_mib,
      rss_mib_by_quarter: r.rss_mib_by_quarter,
      load_avg_1m: r.load_avg_1m,
    }),
  );
}
