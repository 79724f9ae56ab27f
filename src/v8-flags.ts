// The V8 flags the daemon runs with, and whether this process still needs them (bin/sf2loki.js re-execs
// itself with them). Measured in bench/eventlogfile-daemon.ts and explained in docs/capacity.md:
//
// --max-semi-space-size: V8 grows the young generation to 2 x 64 MiB under a steady allocation rate
//   such as an EventLogFile drain; the data path's garbage dies young at 16 MiB semi-spaces too.
// --heap-growing-percent: after each full GC the old generation may grow to live x (1 + n/100) before
//   the next, instead of up to 4x under allocation pressure. A soft bound: live data is never refused,
//   unlike --max-old-space-size, which would crash a daemon whose live set outgrew a guess.
export const DAEMON_V8_FLAGS: readonly string[] = ["--max-semi-space-size=16", "--heap-growing-percent=25"];

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
