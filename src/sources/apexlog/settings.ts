// `sources.apexlog` as the config hands it over (snake_case, durations in ms).
import type { TransformRule } from "../../egress/transforms.ts";

export interface ApexLogSettings {
  enabled: boolean;
  poll_interval: number;
  lookback: number;
  /** Usernames whose logs are shipped; empty means every log the integration user can see. */
  users: readonly string[];
  /** Bodies larger than this are not downloaded; the metadata line is shipped instead. */
  max_body_bytes: number;
  sample: number;
  /** Applied to the metadata map only: the body is never transformed. */
  transforms: readonly TransformRule[];
  /** A body that fails to download is retried next cycle while the log is younger than this (#93). */
  download_max_age: number;
}

export const APEXLOG_DEFAULTS: ApexLogSettings = {
  enabled: false,
  poll_interval: 60_000,
  lookback: 3_600_000,
  users: [],
  max_body_bytes: 5_242_880,
  sample: 1,
  transforms: [],
  download_max_age: 7_200_000,
};
