// Reads the zod schema back as a tree of documented fields, for the generators (example YAML,
// Markdown reference, JSON Schema defaults). zod keeps no public reflection API, so this is the one
// place that looks at schema definitions.
import { z } from "zod";
import type { FieldMeta } from "./fields.ts";
import { formatDuration, parseDuration } from "./duration.ts";

export interface FieldNode {
  key: string;
  path: string;
  meta: Partial<FieldMeta>;
  /** Human type: str, int, float, bool, duration, enum, list[str], map, section, list[section]. */
  type: string;
  hasDefault: boolean;
  /** The default as a YAML-ready value (durations rendered as text). */
  defaultValue: unknown;
  nullable: boolean;
  enumValues?: string[];
  /** Sub-fields of a section, or of each element of a list of sections. */
  children?: FieldNode[];
}

interface Def {
  type: string;
  innerType?: z.ZodType;
  defaultValue?: unknown;
  in?: z.ZodType;
  out?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  entries?: Record<string, string>;
  options?: z.ZodType[];
}

const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

interface Unwrapped {
  base: z.ZodType;
  meta: Partial<FieldMeta>;
  hasDefault: boolean;
  defaultValue: unknown;
  nullable: boolean;
  optional: boolean;
}

function unwrap(schema: z.ZodType): Unwrapped {
  const out: Unwrapped = {
    base: schema,
    meta: {},
    hasDefault: false,
    defaultValue: undefined,
    nullable: false,
    optional: false,
  };
  let s = schema;
  for (;;) {
    const m = z.globalRegistry.get(s) as Partial<FieldMeta> | undefined;
    if (m) out.meta = { ...m, ...out.meta };
    const d = defOf(s);
    if ((d.type === "default" || d.type === "prefault") && d.innerType) {
      if (!out.hasDefault) {
        out.hasDefault = true;
        out.defaultValue = d.defaultValue;
      }
      s = d.innerType;
    } else if ((d.type === "optional" || d.type === "nullable") && d.innerType) {
      if (d.type === "nullable") out.nullable = true;
      else out.optional = true;
      s = d.innerType;
    } else if (d.type === "pipe" && d.in && d.out) {
      // preprocess → the real schema is `out`; transform → the real schema is `in`.
      s = defOf(d.in).type === "transform" ? d.out : d.in;
    } else {
      out.base = s;
      return out;
    }
  }
}

function typeName(base: z.ZodType, meta: Partial<FieldMeta>): { type: string; enumValues?: string[] } {
  if (meta.duration) return { type: "duration" };
  const d = defOf(base);
  switch (d.type) {
    case "string":
      return { type: "str" };
    case "number": {
      const checks = (
        base as unknown as {
          _zod: { def: { checks?: { _zod: { def: { check: string; format?: string } } }[] } };
        }
      )._zod.def.checks;
      const isInt = checks?.some((c) => c._zod.def.format === "safeint") ?? false;
      return { type: isInt ? "int" : "float" };
    }
    case "boolean":
      return { type: "bool" };
    case "enum":
      return { type: "enum", enumValues: Object.values(d.entries ?? {}) };
    case "record":
      return { type: "map" };
    case "array": {
      const el = unwrap(d.element!);
      return {
        type: defOf(el.base).type === "object" ? "list[section]" : `list[${typeName(el.base, el.meta).type}]`,
      };
    }
    case "object":
      return { type: "section" };
    case "union":
      return { type: "str|number" };
    default:
      return { type: d.type };
  }
}

function renderDefault(value: unknown, meta: Partial<FieldMeta>): unknown {
  if (meta.duration && (typeof value === "string" || typeof value === "number")) {
    const ms = parseDuration(value);
    return ms === undefined ? value : formatDuration(ms);
  }
  return value;
}

export function fieldsOf(objectSchema: z.ZodType, prefix = ""): FieldNode[] {
  const shape = defOf(unwrap(objectSchema).base).shape ?? {};
  return Object.entries(shape).map(([key, schema]) => {
    const u = unwrap(schema);
    const path = prefix ? `${prefix}.${key}` : key;
    const t = typeName(u.base, u.meta);
    const node: FieldNode = {
      key,
      path,
      meta: u.meta,
      type: t.type,
      hasDefault: u.hasDefault || u.optional,
      defaultValue: renderDefault(u.defaultValue, u.meta),
      nullable: u.nullable,
      ...(t.enumValues ? { enumValues: t.enumValues } : {}),
    };
    if (t.type === "section") node.children = fieldsOf(u.base, path);
    if (t.type === "list[section]") node.children = fieldsOf(defOf(u.base).element!, `${path}[]`);
    return node;
  });
}
