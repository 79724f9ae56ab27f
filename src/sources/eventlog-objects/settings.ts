// `sources.eventlog_objects` as the config hands it over (snake_case, durations in ms).
import type { TransformRule } from "../../egress/transforms.ts";

export interface EventLogObjectSettings {
  /** sObject API name (`LoginEvent`, `SetupAuditTrail`, `MyAudit__c`). */
  name: string;
  timestamp_field: string;
  poll_interval: number;
  lookback: number;
  sample: number;
  /** Big Objects reject ascending ORDER BY and paging: drain newest-first instead. */
  big_object: boolean;
  /** Records one descending drain keeps in memory (oldest kept); 0 = unbounded. */
  max_catchup_records: number;
  /**
   * Rows newer than now - settle_window are left for a later cycle, so rows that become queryable
   * late are not passed by the watermark (#87). Unset: 5 min for Big Objects, else 0.
   */
  settle_window?: number | null;
}

export interface EventLogObjectsSettings {
  enabled: boolean;
  objects: readonly EventLogObjectSettings[];
  transforms: readonly TransformRule[];
}

export const OBJECT_DEFAULTS: Omit<EventLogObjectSettings, "name"> = {
  timestamp_field: "EventDate",
  poll_interval: 300_000,
  lookback: 3_600_000,
  sample: 1,
  big_object: false,
  max_catchup_records: 200_000,
  settle_window: null,
};

export function objectSettleWindowMs(o: EventLogObjectSettings): number {
  return o.settle_window ?? (o.big_object ? 300_000 : 0);
}
