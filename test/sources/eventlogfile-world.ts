// A simulated org plus an EventLogFileSource wired to it over loopback, for the ELF tests.
import type { TestContext } from "node:test";
import { type SimRestOptions, type SimRestServer } from "../../src/sim/salesforce-rest/index.ts";
import { EventLogFileSource, type EventLogFileSourceOptions } from "../../src/sources/eventlogfile/source.ts";
import {
  ELF_DEFAULTS,
  type EventLogFileSettings,
  type EventLogFileTypeSettings,
} from "../../src/sources/eventlogfile/settings.ts";
import type { RestClient } from "../../src/salesforce/rest.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { MemoryCheckpoints, simOrg } from "./shaping-harness.ts";

/** 2026-01-01T10:00:00Z: files are created around this; the clock starts three hours later. */
export const T0 = Date.UTC(2026, 0, 1, 10);
export const HOUR = 3_600_000;

export function elfType(
  name: string,
  extra: Partial<EventLogFileTypeSettings> = {},
): EventLogFileTypeSettings {
  return { name, structured_metadata_fields: null, labels: [], sample: 1, ...extra };
}

export interface ElfWorld {
  clock: ManualClock;
  sim: SimRestServer;
  rest: RestClient;
  store: MemoryCheckpoints;
  source(
    settings?: Partial<EventLogFileSettings>,
    extra?: Partial<EventLogFileSourceOptions>,
  ): EventLogFileSource;
}

export async function elfWorld(t: TestContext, simOpts: SimRestOptions = {}): Promise<ElfWorld> {
  const clock = new ManualClock({ startMs: T0 + 3 * HOUR });
  const { sim, tokens, rest } = await simOrg(t, clock, simOpts);
  return {
    clock,
    sim,
    rest,
    store: new MemoryCheckpoints(),
    source: (settings = {}, extra = {}) =>
      new EventLogFileSource({
        settings: { ...ELF_DEFAULTS, enabled: true, event_types: [elfType("API")], ...settings },
        tokens,
        apiVersion: "60.0",
        structuredMetadataFields: ["USER_ID", "CLIENT_IP"],
        clock,
        once: true,
        rest,
        ...extra,
      }),
  };
}

/** REQUEST_ID of an entry's line. */
export function requestId(line: string): string {
  return (JSON.parse(line) as Record<string, string>).REQUEST_ID!;
}

export function ids(from: number, to: number, type = "API"): string[] {
  return Array.from({ length: to - from }, (_, i) => `sim-${type}-${from + i}`);
}
