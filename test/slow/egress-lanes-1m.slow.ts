// Issue #11's case at its full size: a 1M-row EventLogFile drains through a Loki capped at 50 000
// lines/s (≥ 20 s of drain) while live Pub/Sub bursts keep arriving within their own pace.
import { test } from "node:test";
import { liveLaneFlowsDuringCappedDrain } from "../egress/lanes-scenario.ts";

test("1M EventLogFile rows under a 50 000 lines/s cap: the live lane keeps flowing", (t) =>
  liveLaneFlowsDuringCappedDrain(t, { rows: 1_000_000, cap: 50_000, maxEntries: 1_000, drainMs: 240_000 }));
