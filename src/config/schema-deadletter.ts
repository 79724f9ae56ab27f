// `deadletter:` — where entries Loki refused for good are kept for `sf2loki deadletter` (docs/egress.md).
import { z } from "zod";
import { bool, int, section } from "./fields.ts";

const deadletter = z.strictObject({
  enabled: bool(
    true,
    "Keep entries Loki refuses for good (400, 413, a permanent error; not budget drops) in the dead-letter store on the state.store backend: a JSON-lines directory next to the state file, or objects under a prefix next to the checkpoint object.",
  ),
  max_bytes: int(
    104_857_600,
    "Bound on the bytes the dead-letter store holds; past it the oldest letters are evicted (sf2loki_deadletter_evicted_total).",
    { min: 4096 },
  ),
  max_entries: int(
    100_000,
    "Bound on the entries the dead-letter store holds; past it the oldest are evicted. 0: only max_bytes bounds it.",
    { min: 0 },
  ),
});

export const deadletterField = section(deadletter, "The dead-letter store of entries Loki refused for good.");
