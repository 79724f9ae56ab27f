// The Pub/Sub-specific part of shaping (§4.4): which fields carry event time. Line, metadata,
// level and sampling come from the shared shaping modules every source uses.
import { timestampOf } from "../shaping/timestamp.ts";

/** `EventDate`, then `CreatedDate`, then `ChangeEventHeader.commitTimestamp` (epoch millis). */
export function eventTimestampNs(p: Record<string, unknown>): bigint | undefined {
  const header = p.ChangeEventHeader;
  return (
    timestampOf(p.EventDate) ??
    timestampOf(p.CreatedDate) ??
    (header !== null && typeof header === "object"
      ? timestampOf((header as Record<string, unknown>).commitTimestamp)
      : undefined)
  );
}
