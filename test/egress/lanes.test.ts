// The streaming lane under a capped Loki while a bulk drain holds the rest: 40 000 rows at 3 000 lines/s
// drain for ~13 s, enough to publish live events into the middle of the drain. The 1M-row case
// is test/slow/egress-lanes-1m.slow.ts (scripts/slow.sh, run by .ci/run).
import { test } from "node:test";
import { liveLaneFlowsDuringCappedDrain } from "./lanes-scenario.ts";

test("the streaming lane keeps flowing at its own pace while a capped bulk drain holds the rest", (t) =>
  liveLaneFlowsDuringCappedDrain(t, { rows: 40_000, cap: 3_000, maxEntries: 200, drainMs: 60_000 }));
