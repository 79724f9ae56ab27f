// A stand-in for the pipeline: drains a source's stream and commits the last token per key every
// N entries into an in-memory checkpoint map, the way the real pipeline commits after each push.
// `killAfter` stops the stream mid-cycle without committing the uncommitted tail (a crash).
import type { TestContext } from "node:test";
import type { LogEntry } from "../../src/model.ts";
import { staticAccessTokens, type AccessTokenSource } from "../../src/salesforce/access-token.ts";
import { RestClient } from "../../src/salesforce/rest.ts";
import {
  startSimRest,
  type SimRestOptions,
  type SimRestServer,
} from "../../src/sim/salesforce-rest/index.ts";
import type { ManualClock } from "../../src/util/clock.ts";
import { eachEntry, type CheckpointReader, type Source } from "../../src/sources/source.ts";

export class MemoryCheckpoints implements CheckpointReader {
  readonly map = new Map<string, string>();
  loads = 0;
  failNextLoads = 0;

  load(key: string): Promise<string | undefined> {
    this.loads++;
    if (this.failNextLoads > 0) {
      this.failNextLoads--;
      return Promise.reject(new Error("store unavailable"));
    }
    return Promise.resolve(this.map.get(key));
  }
}

export interface DriveResult {
  /** Every real (non checkpoint-only) entry, in stream order. */
  entries: LogEntry[];
  checkpointOnly: LogEntry[];
}

export async function drive(
  source: Source,
  store: MemoryCheckpoints,
  opts: { commitEvery?: number; killAfter?: number; signal?: AbortSignal } = {},
): Promise<DriveResult> {
  const commitEvery = opts.commitEvery ?? 10;
  const signal = opts.signal ?? new AbortController().signal;
  const entries: LogEntry[] = [];
  const checkpointOnly: LogEntry[] = [];
  const pending = new Map<string, LogEntry>();
  let seen = 0;
  const commit = (): void => {
    for (const [key, e] of pending) store.map.set(key, e.checkpoint.value);
    pending.clear();
  };
  for await (const entry of eachEntry(source.events(store, signal))) {
    seen++;
    if (opts.killAfter !== undefined && seen > opts.killAfter) return { entries, checkpointOnly };
    (entry.checkpointOnly ? checkpointOnly : entries).push(entry);
    pending.set(entry.checkpoint.key, entry);
    if (seen % commitEvery === 0) commit();
  }
  commit();
  return { entries, checkpointOnly };
}

/** How many times each value occurs. */
export function counts(values: readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const v of values) m.set(v, (m.get(v) ?? 0) + 1);
  return m;
}

/** The simulated org on loopback, a token source for it and a REST client, all closed at test end. */
export async function simOrg(
  t: TestContext,
  clock: ManualClock,
  simOpts: SimRestOptions = {},
): Promise<{ sim: SimRestServer; tokens: AccessTokenSource; rest: RestClient }> {
  const sim = await startSimRest({ clock, ...simOpts });
  const tokens = staticAccessTokens(sim.instanceUrl);
  const rest = new RestClient({ tokens, apiVersion: "60.0", clock });
  t.after(async () => {
    await rest.close();
    await sim.stop();
  });
  return { sim, tokens, rest };
}
