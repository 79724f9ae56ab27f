// A simulated org with SOQL-queryable objects plus an EventLogObjectsSource wired to it.
import type { TestContext } from "node:test";
import {
  sfDatetime,
  simId,
  type SimRecord,
  type SimRestOptions,
  type SimRestServer,
} from "../../src/sim/salesforce-rest/index.ts";
import {
  EventLogObjectsSource,
  type EventLogObjectsSourceOptions,
} from "../../src/sources/eventlog-objects/source.ts";
import {
  OBJECT_DEFAULTS,
  type EventLogObjectSettings,
  type EventLogObjectsSettings,
} from "../../src/sources/eventlog-objects/settings.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { MemoryCheckpoints, simOrg } from "./shaping-harness.ts";

export const NOW = Date.UTC(2026, 0, 1, 12);
export const MIN = 60_000;

export function object(name: string, extra: Partial<EventLogObjectSettings> = {}): EventLogObjectSettings {
  return { ...OBJECT_DEFAULTS, name, ...extra };
}

/** A LoginEvent-like record; Ids sort in `n` order. */
export function rec(n: number, ms: number, extra: Partial<SimRecord> = {}): SimRecord {
  return {
    Id: simId("0Yq", n),
    EventDate: sfDatetime(ms),
    Username: `user${n % 7}@example.com`,
    LoginType: "Application",
    Status: n % 10 === 0 ? "Failed" : "Success",
    ...extra,
  };
}

export interface ObjectsWorld {
  clock: ManualClock;
  sim: SimRestServer;
  store: MemoryCheckpoints;
  source(
    objects: EventLogObjectSettings[],
    settings?: Partial<EventLogObjectsSettings>,
    extra?: Partial<EventLogObjectsSourceOptions>,
  ): EventLogObjectsSource;
}

export async function objectsWorld(
  t: TestContext,
  simOpts: SimRestOptions = {},
  clock = new ManualClock({ startMs: NOW }),
): Promise<ObjectsWorld> {
  const { sim, tokens, rest } = await simOrg(t, clock, simOpts);
  return {
    clock,
    sim,
    store: new MemoryCheckpoints(),
    source: (objects, settings = {}, extra = {}) =>
      new EventLogObjectsSource({
        settings: { enabled: true, objects, transforms: [], ...settings },
        tokens,
        apiVersion: "60.0",
        structuredMetadataFields: ["Username"],
        clock,
        once: true,
        rest,
        ...extra,
      }),
  };
}

export function idsOf(entries: readonly { line: string }[]): string[] {
  return entries.map((e) => (JSON.parse(e.line) as { Id: string }).Id);
}
