// The checkpoint document: one flat JSON object of string keys to string values. Every store parses and
// serialises it here, so "corrupt" means the same thing on a file, in S3 and in GCS.
export type CheckpointDocument = Record<string, string>;

/** The file store's epoch fence lives in the document under this reserved key (stored as a string). */
export const FENCE_EPOCH_KEY = "__fence_epoch__";

/** Keys the stores write for themselves and the CLI refuses to touch. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set([FENCE_EPOCH_KEY]);

export type ParseResult =
  { ok: true; doc: CheckpointDocument } | { ok: false; problem: string; cause?: unknown };

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Strict: invalid UTF-8, invalid JSON, a non-object or a non-string value are all reported, never guessed. */
export function parseDocument(bytes: Uint8Array): ParseResult {
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch (cause) {
    return { ok: false, problem: "not valid UTF-8", cause };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    return { ok: false, problem: `invalid JSON: ${(cause as Error).message}`, cause };
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return { ok: false, problem: `the document is a JSON ${jsonType(parsed)}, not an object` };
  }
  for (const [key, value] of Object.entries(parsed)) {
    if (typeof value !== "string") {
      return {
        ok: false,
        problem: `the value of ${JSON.stringify(key)} is a JSON ${jsonType(value)}, not a string`,
      };
    }
  }
  return { ok: true, doc: parsed as CheckpointDocument };
}

/** Compact, one line, no trailing newline: the format the Python stores wrote. */
export function serialiseDocument(doc: Readonly<CheckpointDocument>): Uint8Array {
  return Buffer.from(JSON.stringify(doc), "utf8");
}

/** Own keys only: `load("constructor")` must not find Object.prototype's. */
export function lookup(doc: Readonly<CheckpointDocument>, key: string): string | undefined {
  return Object.hasOwn(doc, key) ? doc[key] : undefined;
}

export function withoutReserved(doc: Readonly<CheckpointDocument>): CheckpointDocument {
  const out: CheckpointDocument = {};
  for (const [key, value] of Object.entries(doc)) if (!RESERVED_KEYS.has(key)) out[key] = value;
  return out;
}

/** Only the reserved keys of `doc` (the fence epoch), kept across a whole-document replace. */
export function reservedOf(doc: Readonly<CheckpointDocument>): CheckpointDocument {
  const out: CheckpointDocument = {};
  for (const [key, value] of Object.entries(doc)) if (RESERVED_KEYS.has(key)) out[key] = value;
  return out;
}

export function withoutKey(doc: Readonly<CheckpointDocument>, key: string): CheckpointDocument {
  const out: CheckpointDocument = { ...doc };
  // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- the document is a string map by design
  delete out[key];
  return out;
}

function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}
