// `sources.eventlogfile` as the config hands it over (snake_case, durations in ms), and the
// defaults that depend on other keys.
import type { TransformRule } from "../../egress/transforms.ts";
import type { ElfInterval } from "../../salesforce/eventlogfile/listing.ts";

export interface EventLogFileTypeSettings {
  /** An EventType, or `*` to discover every type with files of the interval. */
  name: string;
  /** null inherits the global list; [] ships no routed fields. */
  structured_metadata_fields: readonly string[] | null;
  /** Columns promoted to stream labels (low cardinality only). */
  labels: readonly string[];
  sample: number;
}

export interface EventLogFileSettings {
  enabled: boolean;
  interval: ElfInterval;
  event_types: readonly EventLogFileTypeSettings[];
  /** Discovered types to leave out. */
  exclude: readonly string[];
  poll_interval: number;
  lookback: number;
  timestamp_column: string;
  page_size: number;
  /** Unset: 5 min for Hourly (files can be listed before they are complete), 0 for Daily. */
  settle_window?: number | null;
  download_max_age: number;
  transforms: readonly TransformRule[];
  concurrency: number;
}

export const ELF_DEFAULTS: EventLogFileSettings = {
  enabled: false,
  interval: "Hourly",
  event_types: [],
  exclude: [],
  poll_interval: 3_600_000,
  lookback: 86_400_000,
  timestamp_column: "TIMESTAMP_DERIVED",
  page_size: 1000,
  settle_window: null,
  download_max_age: 86_400_000,
  transforms: [],
  concurrency: 4,
};

export function settleWindowMs(s: EventLogFileSettings): number {
  return s.settle_window ?? (s.interval === "Hourly" ? 300_000 : 0);
}
