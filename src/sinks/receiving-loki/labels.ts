// Loki stream labels: the static-label guard and the canonical `{k="v",...}` rendering.
import { ConfigError } from "../../errors.ts";
import type { Labels } from "../../model.ts";

/** The only label names sf2loki ever sends as static labels (spec B §4.10). */
export const LABEL_ALLOWLIST: readonly string[] = [
  "job",
  "service_name",
  "source",
  "event_type",
  "sf_org_id",
  "environment",
  "org",
];

/** Set per entry by each source; a static value would overwrite every stream's identity. */
export const RESERVED_LABELS: readonly string[] = ["source", "event_type"];

/** Throws one ConfigError naming every offending key of `sink.loki.labels`. */
export function guardStaticLabels(labels: Labels): void {
  const problems: string[] = [];
  for (const key of Object.keys(labels).sort()) {
    if (RESERVED_LABELS.includes(key)) problems.push(`${key} (reserved: set per entry by the source)`);
    else if (!LABEL_ALLOWLIST.includes(key)) problems.push(`${key} (not in the allowlist)`);
  }
  if (problems.length === 0) return;
  const allowed = LABEL_ALLOWLIST.filter((k) => !RESERVED_LABELS.includes(k)).join(", ");
  throw new ConfigError(
    `sink.loki.labels: ${problems.join(", ")}; static labels may only be ${allowed}. ` +
      `Remove these keys (put high-cardinality values in structured metadata instead).`,
  );
}

const NEEDS_ESCAPE = /[\\"\n]/;

/** Backslash first, then double quote, then newline; everything else raw (Loki's parser accepts it). */
export function escapeLabelValue(value: string): string {
  if (!NEEDS_ESCAPE.test(value)) return value;
  return value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
}

/** `{k1="v1",k2="v2"}`, keys ascending, no spaces. Injective, so it doubles as the stream key. */
export function renderLabels(labels: Labels): string {
  const keys = Object.keys(labels);
  if (keys.length > 1) keys.sort();
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (i > 0) out += ",";
    out += `${k}="${escapeLabelValue(labels[k]!)}"`;
  }
  return out + "}";
}
