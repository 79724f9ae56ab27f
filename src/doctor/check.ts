// The vocabulary of `sf2loki doctor`: one row per check, four statuses, and the context every check
// reads. A check never throws for an expected failure: it returns a FAIL row whose detail says what
// to do, so one broken dependency never hides the rows after it.
import type { Config } from "../config/schema.ts";
import type { Clock } from "../util/clock.ts";
import type { Graph, OrgWiring } from "../daemon/wiring.ts";

export type CheckStatus = "PASS" | "WARN" | "FAIL" | "SKIP";

export interface CheckRow {
  /** `auth`, `pubsub:/event/LoginEventStream`; prefixed `<org>/` under multi-org. */
  name: string;
  status: CheckStatus;
  detail: string;
  /** The org the row is about, under multi-org; absent for process-wide checks and single-org. */
  org?: string;
}

export interface DoctorEnv {
  config: Config;
  /** The daemon's own offline graph: its auth, REST clients, sink and store settings. */
  graph: Graph;
  clock: Clock;
  env: Record<string, string | undefined>;
  /** Bounds every network call of the run (Ctrl-C, and a per-run deadline). */
  signal: AbortSignal;
}

/** One org under check, with the outcome of its auth row for the rows that depend on it. */
export interface OrgUnderCheck {
  wiring: OrgWiring;
  /** Empty for single-org. */
  name: string;
}

export const pass = (name: string, detail: string): CheckRow => ({ name, status: "PASS", detail });
export const warn = (name: string, detail: string): CheckRow => ({ name, status: "WARN", detail });
export const fail = (name: string, detail: string): CheckRow => ({ name, status: "FAIL", detail });
export const skip = (name: string, reason: string): CheckRow => ({
  name,
  status: "SKIP",
  detail: `skipped: ${reason}`,
});

/** Milliseconds since `startedMs` on the monotonic clock, for "in Nms" details. */
export function elapsedMs(clock: Clock, startedMs: number): number {
  return Math.round(clock.monotonic() - startedMs);
}
