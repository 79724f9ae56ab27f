// Field builders for the config schema. Every field carries its description (the reference docs are
// generated from them) and, where useful, an example; the generators read both from the zod registry.
import { z } from "zod";
import { formatDuration, parseDuration } from "./duration.ts";

export interface FieldMeta {
  description: string;
  examples?: unknown[];
  /** Inline secret: redacted in docs, commented out in the example config. */
  secret?: boolean;
  /** Rendered as a Go-style duration in generated docs. */
  duration?: boolean;
  /** The default is derived from other settings; the text says how. */
  derivedDefault?: string;
}

export function meta<T extends z.ZodType>(schema: T, m: FieldMeta): T {
  return schema.meta(m as unknown as Record<string, unknown>);
}

/** Numbers arrive as strings from env overrides; accept those the way YAML would have typed them. */
const numeric = (v: unknown): unknown =>
  typeof v === "string" && /^\s*-?\d+(\.\d+)?\s*$/.test(v) ? Number(v) : v;
const boolish = (v: unknown): unknown => {
  if (typeof v !== "string") return v;
  const s = v.trim().toLowerCase();
  if (["true", "1", "yes", "on"].includes(s)) return true;
  if (["false", "0", "no", "off"].includes(s)) return false;
  return v;
};

export const bool = (def: boolean, description: string) =>
  meta(z.preprocess(boolish, z.boolean()).default(def), { description });

export const int = (def: number, description: string, opts: { min?: number; max?: number } = {}) => {
  let n = z.number().int();
  if (opts.min !== undefined) n = n.min(opts.min);
  if (opts.max !== undefined) n = n.max(opts.max);
  return meta(z.preprocess(numeric, n).default(def), { description });
};

export const float = (
  def: number,
  description: string,
  opts: { min?: number; max?: number; gtZero?: boolean } = {},
) => {
  let n = z.number();
  if (opts.gtZero) n = n.gt(0);
  if (opts.min !== undefined) n = n.min(opts.min);
  if (opts.max !== undefined) n = n.max(opts.max);
  return meta(z.preprocess(numeric, n).default(def), { description });
};

/** A sampling keep-rate in (0, 1]. */
export const rate = (description: string) => float(1.0, description, { gtZero: true, max: 1 });

export const str = (def: string, description: string, examples?: string[]) =>
  meta(z.string().default(def), { description, ...(examples ? { examples } : {}) });

export const optStr = (description: string, examples?: string[]) =>
  meta(z.string().nullable().default(null), { description, ...(examples ? { examples } : {}) });

export const oneOf = <const T extends readonly [string, ...string[]]>(
  values: T,
  def: T[number],
  description: string,
) => meta(z.enum(values).default(def as never), { description });

/** A number that is absent unless set: `null` means "inherit" (per-org overrides). */
export const optNumber = (description: string, opts: { int?: boolean; min?: number } = {}) => {
  let n = opts.int ? z.number().int() : z.number();
  if (opts.min !== undefined) n = n.min(opts.min);
  return meta(z.preprocess(numeric, n.nullable()).default(null), { description });
};

/** One of `values`, or `null` (unset: inherit). */
export const optOneOf = <const T extends readonly [string, ...string[]]>(values: T, description: string) =>
  meta(z.enum(values).nullable().default(null), { description });

export const strList = (description: string, def: string[] = [], examples?: unknown[]) =>
  meta(z.array(z.string()).default(def), { description, ...(examples ? { examples } : {}) });

export const strMap = (description: string, examples?: unknown[]) =>
  meta(z.record(z.string(), z.string()).default({}), { description, ...(examples ? { examples } : {}) });

/** Inline secret value; its `*_file` sibling is resolved by the loader. */
export const secret = (description: string) =>
  meta(z.string().nullable().default(null), { description, secret: true });

export const secretFile = (description: string, examples?: string[]) =>
  meta(z.string().nullable().default(null), { description, ...(examples ? { examples } : {}) });

const durationInput = z.union([z.string(), z.number()]);

/** A duration in milliseconds; accepts every form parseDuration does. */
export function durationSchema() {
  return durationInput.transform((v, ctx) => {
    const ms = parseDuration(v);
    if (ms === undefined) {
      ctx.addIssue({
        code: "custom",
        message: `invalid duration ${JSON.stringify(v)} (use Go-style shorthand such as 500ms, 30s, 5m, 1h30m, 1d, 2w, or seconds)`,
      });
      return z.NEVER;
    }
    return ms;
  });
}

export const duration = (def: string, description: string) =>
  meta(durationSchema().prefault(def), { description, duration: true, examples: [def] });

/** A duration whose default depends on other keys: absent here, derived after parsing. */
export const optDuration = (description: string, derivedDefault: string) =>
  meta(durationSchema().optional(), { description, duration: true, derivedDefault });

export { formatDuration };

/** Nested section: absent or empty (`batch:` with nothing under it) means every default. */
export const section = <T extends z.ZodType>(schema: T, description: string) =>
  meta(z.preprocess((v) => v ?? {}, schema).prefault({}) as unknown as T, { description });
