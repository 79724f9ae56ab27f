// Entry timestamps (spec B §5.4): the first candidate field that parses wins; otherwise a stable
// fallback (the file's CreatedDate, the watermark) unless it is too old for Loki, otherwise now.
import { msToNs } from "../../model.ts";
import { parseSfTimestampNs } from "../../salesforce/soql-datetime.ts";
import { PyFloat } from "../../util/py-float.ts";

const HOUR_NS = 3_600_000_000_000n;
const CLAMP_NS = 300_000_000_000n;

/** Numbers are epoch milliseconds; strings are ISO-8601 or the ELF compact form; naive means UTC. */
export function timestampOf(value: unknown): bigint | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? msToNs(value) : undefined;
  if (typeof value === "string") return parseSfTimestampNs(value.trim());
  if (value instanceof PyFloat) return msToNs(value.value);
  return undefined;
}

export interface PickedTimestamp {
  ns: bigint;
  fellBack: boolean;
}

export function pickTimestamp(
  payload: Record<string, unknown>,
  fields: readonly string[],
  fallbackNs: bigint | undefined,
  nowMs: number,
): PickedTimestamp {
  for (const f of fields) {
    const ns = timestampOf(payload[f]);
    if (ns !== undefined) return { ns, fellBack: false };
  }
  const nowNs = msToNs(nowMs);
  if (fallbackNs === undefined) return { ns: nowNs, fellBack: true };
  // Loki refuses samples far behind the stream's newest; a moved timestamp beats a lost row.
  return { ns: nowNs - fallbackNs > HOUR_NS ? nowNs - CLAMP_NS : fallbackNs, fellBack: true };
}
