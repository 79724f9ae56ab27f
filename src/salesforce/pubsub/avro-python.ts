// Avro decoding that yields what the Python sf2loki's fastavro reader yields, as far as the line and
// structured metadata can tell: `double`/`float` values keep their float-ness (a whole one is boxed
// as PyFloat so it prints `37.0`), `bytes`/`fixed` become Python's `b'..'` text, and the logical
// types fastavro converts (timestamps, date, time, decimal, uuid) become the text `str()` gives
// for the Python object. Everything is decided once per schema (an avsc type hook), so decoding
// an event costs one extra call per such field and no allocation for a fractional double.
import avsc from "avsc";
import { PyFloat, numberOf, pyFloatValue } from "../../util/py-float.ts";
import { pyBytesRepr, pyDate, pyDecimalStr, pyTime, pyTimestamp, pyUuid } from "./avro-python-values.ts";

/** Our internal logical-type names; never seen on the wire. */
const MARKER = "sf2loki-";
const PY_FLOAT = `${MARKER}py-float`;
const PY_BYTES = `${MARKER}py-bytes`;

class PyFloatType extends avsc.types.LogicalType {
  protected override _fromValue(val: number): number | PyFloat {
    return pyFloatValue(val);
  }
  protected override _toValue(val: number | PyFloat): number {
    return numberOf(val);
  }
  protected override _resolve(type: avsc.Type): ((v: number) => number | PyFloat) | undefined {
    return avsc.Type.isType(type, "double", "float", "int", "long") ? pyFloatValue : undefined;
  }
}

class PyBytesType extends avsc.types.LogicalType {
  protected override _fromValue(val: Buffer): string {
    return pyBytesRepr(val);
  }
  protected override _toValue(val: unknown): unknown {
    return val;
  }
}

/** A fastavro conversion: the text, or undefined to keep the raw value (Python would fail). */
type Convert = (raw: never, schema: Record<string, unknown>) => string | undefined;

interface Conversion {
  readonly types: readonly string[];
  readonly convert: Convert;
}

const CONVERSIONS: Readonly<Record<string, Conversion>> = {
  "timestamp-millis": { types: ["long"], convert: (ms: number) => pyTimestamp(ms * 1000, false) },
  "timestamp-micros": { types: ["long"], convert: (us: number) => pyTimestamp(us, false) },
  "local-timestamp-millis": { types: ["long"], convert: (ms: number) => pyTimestamp(ms * 1000, true) },
  "local-timestamp-micros": { types: ["long"], convert: (us: number) => pyTimestamp(us, true) },
  date: { types: ["int"], convert: (days: number) => pyDate(days) },
  "time-millis": { types: ["int"], convert: (ms: number) => pyTime(ms * 1000) },
  "time-micros": { types: ["long"], convert: (us: number) => pyTime(us) },
  uuid: { types: ["string"], convert: (s: string) => pyUuid(s) },
  decimal: {
    types: ["bytes", "fixed"],
    convert: (buf: Buffer, schema) => pyDecimalStr(buf, typeof schema.scale === "number" ? schema.scale : 0),
  },
};

/** One class per schema node: the conversion needs the node's own attributes (a decimal's scale). */
function conversionType(
  conversion: Conversion,
  schema: Record<string, unknown>,
): typeof avsc.types.LogicalType {
  return class extends avsc.types.LogicalType {
    protected override _fromValue(val: never): unknown {
      return conversion.convert(val, schema) ?? fallback(val);
    }
    protected override _toValue(val: unknown): unknown {
      return val;
    }
  };
}

/** Python keeps the raw value when no conversion applies; bytes still print as `b'..'`. */
function fallback(val: unknown): unknown {
  return Buffer.isBuffer(val) ? pyBytesRepr(val) : val;
}

function typeHook(schema: avsc.Schema, opts: avsc.ForSchemaOptions): avsc.Type | undefined {
  if (typeof schema === "string") {
    if (schema === "double" || schema === "float")
      return new PyFloatType({ type: schema, logicalType: PY_FLOAT }, opts);
    if (schema === "bytes") return new PyBytesType({ type: "bytes", logicalType: PY_BYTES }, opts);
    return undefined;
  }
  if (typeof schema !== "object" || Array.isArray(schema)) return undefined;
  const node = schema as Record<string, unknown>;
  const base = node.type;
  if (typeof base !== "string") return undefined;
  const logical = node.logicalType;
  // Our own marker: avsc is building the node this hook already replaced.
  if (typeof logical === "string" && logical.startsWith(MARKER)) return undefined;
  const conversion = typeof logical === "string" ? CONVERSIONS[logical] : undefined;
  if (conversion?.types.includes(base)) {
    const Derived = conversionType(conversion, node);
    return new Derived({ ...node, logicalType: `${MARKER}${String(logical)}` } as avsc.Schema, opts);
  }
  if (base === "double" || base === "float")
    return new PyFloatType({ ...node, logicalType: PY_FLOAT } as avsc.Schema, opts);
  if (base === "bytes" || base === "fixed")
    return new PyBytesType({ ...node, logicalType: PY_BYTES } as avsc.Schema, opts);
  return undefined;
}

/** avsc options that decode as fastavro does (see the header). */
export function pythonDecodeOptions(wrapUnions: boolean | "auto"): Partial<avsc.ForSchemaOptions> {
  return { wrapUnions, typeHook };
}
