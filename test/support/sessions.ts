// Ending a simulated org's sessions from a test (#38): the org's manual clock jumps past its session
// timeout, and the test waits until every source of the process under test is back with a fresh token.
import type { SimOrg } from "../../src/sim/salesforce/index.ts";
import type { ManualClock } from "../../src/util/clock.ts";
import { waitFor } from "./timing.ts";

/** What shows that every source of an org is back: a query of each, a Subscribe per topic, delivery. */
export interface Resumed {
  /** A fragment of each polling source's SOQL (`FROM ApexLog`). */
  queries: readonly string[];
  /** Topics streamed over Pub/Sub: each gets one new event, which ends its stream on the old token. */
  topics: readonly string[];
  /** Everything published has reached Loki. */
  delivered?: () => boolean;
}

/** Where the org's counters stand before its sessions end. */
export interface SessionMark {
  org: SimOrg;
  queries: number;
  subscribes: number;
}

export function mark(org: SimOrg): SessionMark {
  return { org, queries: org.rest.stats.queries.length, subscribes: org.stats().subscribeCalls };
}

/**
 * Every source came back after `since`: a query answered (the sim records only queries it
 * authorised), a new Subscribe per topic, and delivery. Publishes the one event per topic first.
 */
export async function resumed(since: SessionMark, want: Resumed, ms = 30_000): Promise<void> {
  const { org } = since;
  for (const topic of want.topics) org.faults.publish(topic, 1);
  const back = (): boolean => {
    const fresh = org.rest.stats.queries.slice(since.queries).join("\n");
    return (
      want.queries.every((q) => fresh.includes(q)) &&
      org.stats().subscribeCalls >= since.subscribes + want.topics.length &&
      (want.delivered?.() ?? true)
    );
  };
  try {
    await waitFor(back, "every source back on a fresh token", ms);
  } catch (err) {
    const fresh = org.rest.stats.queries.slice(since.queries).join("\n");
    const missing = want.queries.filter((q) => !fresh.includes(q));
    const subscribes = org.stats().subscribeCalls - since.subscribes;
    throw new Error(
      `${String(err)}: no query since of ${missing.join(", ") || "-"}; ${subscribes} of ${want.topics.length} Subscribes; delivered ${want.delivered?.() ?? "n/a"}; mints ${org.stats().mints}`,
      { cause: err },
    );
  }
}

/** Ends the org's current session (the clock moves one timeout on) and waits for every source. */
export async function nextSession(
  org: SimOrg,
  clock: ManualClock,
  timeoutMs: number,
  want: Resumed,
): Promise<void> {
  const since = mark(org);
  clock.advance(timeoutMs);
  await resumed(since, want);
}

/** Every polling source of a `sources:` block polls each second, so a dead session shows at once. */
export function fastPolls(sources: Record<string, unknown>): Record<string, unknown> {
  const blocks = sources as Record<string, Record<string, unknown> | undefined>;
  const objects = blocks.eventlog_objects?.objects as Record<string, unknown>[] | undefined;
  for (const o of objects ?? []) o.poll_interval = "1s";
  if (blocks.eventlogfile) blocks.eventlogfile.poll_interval = "1s";
  if (blocks.apexlog) blocks.apexlog.poll_interval = "1s";
  return sources;
}
