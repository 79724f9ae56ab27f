// Transform rules (spec B §5.5): PII redaction and row filtering, compiled once per source and
// applied to each payload in place, before routing, label promotion, timestamps and sampling.
import { createHash } from "node:crypto";
import { metrics, type Counter, type Meter } from "@opentelemetry/api";
import { ConfigError } from "../errors.ts";
import { compileGlob } from "../util/glob.ts";
import { pythonPatternToJs, pythonReplacementToJs } from "./transforms-regex.ts";
import { pyStr } from "./transforms-python.ts";

/** One rule as written in YAML (`sources.<source>.transforms[]`). */
export interface TransformRule {
  action: "hash" | "mask" | "drop_field" | "drop_row" | "regex_replace";
  fields?: readonly string[];
  match?: Readonly<Record<string, string>>;
  pattern?: string | null;
  replacement?: string;
  name?: string;
}

export interface Transforms {
  /** No rule at all: callers skip the call (and may keep fast paths). */
  readonly empty: boolean;
  /** Some rule removes keys (`drop_field`). */
  readonly removesFields: boolean;
  /** Mutates `payload`; false means a `drop_row` rule matched and the row must not be shipped. */
  apply(payload: Record<string, unknown>): boolean;
  /** Field names a `drop_field` rule removes (the ELF label-promotion guard reads this). */
  readonly droppedFields: ReadonlySet<string>;
}

type Step = (payload: Record<string, unknown>) => boolean;

const IPV4 =
  /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

export function maskValue(text: string): string {
  const at = text.indexOf("@");
  if (at >= 0) return `***@${text.slice(at + 1)}`;
  const ip = IPV4.exec(text);
  if (ip) return `${ip[1]}.${ip[2]}.${ip[3]}.x`;
  return "***";
}

export function hashValue(salt: string, text: string): string {
  return createHash("sha256")
    .update(salt + text, "utf8")
    .digest("hex")
    .slice(0, 16);
}

function eachField(
  fields: readonly string[],
  fn: (payload: Record<string, unknown>, f: string, v: unknown) => void,
): Step {
  return (payload) => {
    for (const f of fields) {
      const v = payload[f];
      if (v !== null && v !== undefined) fn(payload, f, v);
    }
    return true;
  };
}

function compileRule(
  rule: TransformRule,
  index: number,
  salt: string,
  onDrop: (rule: string) => void,
  where: string,
): Step {
  const name = rule.name || `${rule.action}-${index}`;
  const fields = rule.fields ?? [];
  const bad = (why: string): ConfigError =>
    new ConfigError(`${where}.transforms[${index}] (${name}): ${why}`);
  if (rule.action === "drop_row") {
    const match = Object.entries(rule.match ?? {});
    if (match.length === 0) throw bad("drop_row needs a non-empty `match`");
    if (fields.length > 0) throw bad("drop_row takes `match`, not `fields`");
    const tests = match.map(([field, glob]) => ({ field, re: compileGlob(glob) }));
    return (payload) => {
      for (const t of tests) {
        const v = payload[t.field];
        if (!t.re.test(v === undefined ? "" : pyStr(v))) return true;
      }
      onDrop(name);
      return false;
    };
  }
  if (fields.length === 0) throw bad(`${rule.action} needs a non-empty \`fields\``);
  if (rule.action !== "regex_replace" && rule.pattern != null)
    throw bad("`pattern` belongs to regex_replace only");
  switch (rule.action) {
    case "hash":
      return eachField(fields, (p, f, v) => (p[f] = hashValue(salt, pyStr(v))));
    case "mask":
      return eachField(fields, (p, f, v) => (p[f] = maskValue(pyStr(v))));
    case "drop_field":
      return (payload) => {
        for (const f of fields) Reflect.deleteProperty(payload, f);
        return true;
      };
    case "regex_replace": {
      if (rule.pattern == null) throw bad("regex_replace needs a `pattern`");
      let re: RegExp;
      try {
        re = pythonPatternToJs(rule.pattern);
      } catch (err) {
        throw bad(`pattern does not compile: ${err instanceof Error ? err.message : String(err)}`);
      }
      const replacement = pythonReplacementToJs(rule.replacement ?? "");
      return eachField(fields, (p, f, v) => (p[f] = pyStr(v).replace(re, replacement)));
    }
  }
}

/**
 * Compiles a source's rule list. Throws ConfigError on an invalid rule (the config schema checks
 * first; this is the last line). `where` names the config path in messages.
 */
export function compileTransforms(
  rules: readonly TransformRule[],
  opts: { source: string; salt?: string | null; meter?: Meter; where?: string },
): Transforms {
  const where = opts.where ?? `sources.${opts.source}`;
  let filtered: Counter | undefined;
  const onDrop = (rule: string): void => {
    filtered ??= (opts.meter ?? metrics.getMeter("sf2loki")).createCounter("sf2loki_rows_filtered", {
      description: "Rows dropped by a drop_row transform",
    });
    filtered.add(1, { source: opts.source, rule });
  };
  const steps = rules.map((r, i) => compileRule(r, i, opts.salt ?? "", onDrop, where));
  const droppedFields = new Set(
    rules.filter((r) => r.action === "drop_field").flatMap((r) => r.fields ?? []),
  );
  return {
    empty: steps.length === 0,
    removesFields: droppedFields.size > 0,
    droppedFields,
    apply(payload) {
      for (const step of steps) if (!step(payload)) return false;
      return true;
    },
  };
}

export const NO_TRANSFORMS: Transforms = compileTransforms([], { source: "none" });
