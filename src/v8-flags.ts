// The V8 flags the daemon runs with, and whether this process still needs them (bin/sf2loki.js re-execs
// itself with them). Measured in bench/eventlogfile-daemon.ts and bench/pubsub-steady.ts, explained in
// docs/capacity.md:
//
// --max-semi-space-size: V8 grows the young generation to 2 x 64 MiB under a steady allocation rate
//   such as an EventLogFile drain or a Pub/Sub stream, and keeps it there. The data path's garbage dies
//   young at 8 MiB semi-spaces too: a 5 000 events/s stream runs in ~20 MiB less RSS than at 16 for the
//   same CPU, and a 1M-row EventLogFile drain measured no slower (docs/capacity.md).
// --heap-growing-percent: after each full GC the old generation may grow to live x (1 + n/100) before
//   the next, instead of up to 4x under allocation pressure. A soft bound: live data is never refused,
//   unlike --max-old-space-size, which would crash a daemon whose live set outgrew a guess. 50 rather
//   than 25: half the full GCs of a drain (13.5 -> 9.6 CPU-s for 1M rows) for ~7 MiB of peak.
export const DAEMON_V8_FLAGS: readonly string[] = ["--max-semi-space-size=8", "--heap-growing-percent=50"];

/**
 * The environment the daemon runs with, read by the C library when the process starts (so it, too, is
 * set by bin/sf2loki.js's re-exec). MALLOC_ARENA_MAX=1: glibc gives each thread that allocates (V8's
 * compiler and GC workers, libuv's pool) an arena of its own, and an arena keeps what was freed in it;
 * one arena for the whole process cut a steady 5 000 events/s Pub/Sub daemon from 164.9 to ~152 MiB and
 * a 250 000-row EventLogFile drain's peak from ~198 to ~186 MiB, with no CPU cost we could measure
 * (docs/capacity.md, "V8 flags"). Ignored by musl and other C libraries.
 */
export const DAEMON_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: "1" };

/** Set to `0` to run without the daemon's V8 flags (or to pass your own through NODE_OPTIONS / node). */
export const V8_FLAGS_ENV = "SF2LOKI_V8_FLAGS";

/**
 * The flags still missing from this process: none when the operator chose their own (any of the two
 * given on the command line or in NODE_OPTIONS), or turned them off.
 */
export function missingV8Flags(execArgv: readonly string[], env: NodeJS.ProcessEnv): string[] {
  if (env[V8_FLAGS_ENV] === "0") return [];
  const given = [...execArgv, ...(env.NODE_OPTIONS ?? "").split(/\s+/)];
  const names = DAEMON_V8_FLAGS.map((f) => f.split("=")[0]!);
  const chosen = given.some((arg) => names.some((n) => arg === n || arg.startsWith(`${n}=`)));
  return chosen ? [] : [...DAEMON_V8_FLAGS];
}

/** DAEMON_ENV's variables this environment does not set yet: an operator's own value wins. */
export function missingDaemonEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  if (env[V8_FLAGS_ENV] === "0") return {};
  return Object.fromEntries(Object.entries(DAEMON_ENV).filter(([name]) => env[name] === undefined));
}
