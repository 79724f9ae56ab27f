// Commit gauges by checkpoint key (spec B §2.8). A multi-org `org=<name>:` prefix is stripped and
// becomes an `org` attribute (OPEN #100); polling watermarks are read from the JSON value's
// timestamp field (the original always fell back to "now"). Never throws.
import type { PipelineMetrics } from "./metrics.ts";

const ORG_PREFIX = /^org=([A-Za-z0-9_-]+):/;

export function recordCommitGauges(
  metrics: PipelineMetrics,
  commits: ReadonlyMap<string, string>,
  nowMs: number,
): void {
  for (const [key, value] of commits) {
    const match = ORG_PREFIX.exec(key);
    const rest = match ? key.slice(match[0].length) : key;
    const orgAttr: Record<string, string> = match ? { org: match[1]! } : {};
    if (rest.startsWith("pubsub:")) {
      metrics.replayCommit.set(nowMs / 1000, { topic: rest.slice(7), ...orgAttr });
    } else if (rest.startsWith("eventlog_objects:")) {
      const object = rest.slice(17);
      const at = watermarkMs(value, "last_ts", nowMs);
      metrics.watermark.set(at / 1000, { source: "eventlog_objects", object, ...orgAttr });
    } else if (rest.startsWith("eventlogfile:")) {
      const object = rest.slice(13);
      const at = watermarkMs(value, "last_created", nowMs);
      metrics.watermark.set(at / 1000, { source: "eventlogfile", object, ...orgAttr });
    } else if (rest === "apexlog") {
      const at = watermarkMs(value, "last_ts", nowMs);
      metrics.watermark.set(at / 1000, { source: "apexlog", object: "apexlog", ...orgAttr });
    }
  }
}

/** The ISO timestamp in `value[field]` (or `value` itself when it is a bare timestamp), else now. */
export function watermarkMs(value: string, field: string, nowMs: number): number {
  let text: unknown = value;
  if (value.startsWith("{")) {
    try {
      text = (JSON.parse(value) as Record<string, unknown>)[field];
    } catch {
      return nowMs;
    }
  }
  if (typeof text !== "string") return nowMs;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? nowMs : ms;
}
