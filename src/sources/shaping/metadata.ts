// Structured metadata ("route fields"): the configured fields a payload carries, stringified the
// Python way, plus a `level` that is always present. Stream labels never come from here.
import type { Labels } from "../../model.ts";
import { pyStr } from "../../egress/transforms-python.ts";
import { deriveLevel } from "./level.ts";

export function routeFields(payload: Record<string, unknown>, fields: readonly string[]): Labels {
  const out: Labels = {};
  for (const f of fields) {
    const v = payload[f];
    if (v !== null && v !== undefined) out[f] = pyStr(v);
  }
  out.level = deriveLevel(payload);
  return out;
}
