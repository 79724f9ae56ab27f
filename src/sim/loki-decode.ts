// Decodes Loki push bodies, both encodings: undoes the content encoding, then JSON.parse or the
// hand-written protobuf reader (loki-decode-fast.ts, checked against protobufjs in the tests).
import { gunzipSync } from "node:zlib";
import snappy from "snappy";
import { decodePushRequest } from "./loki-decode-fast.ts";
import { BodyDecodeError, type DecodedEntry, type DecodedStream } from "./loki-decoded.ts";

export { BodyDecodeError, type DecodedEntry, type DecodedStream };

// As the sink compresses (src/sinks/loki/request.ts): snappy's default output is an external buffer
// freed by a finalizer, and a 350 KB one per push costs the receiver kernel time (fresh pages each
// call): 1.2 µs/entry of CPU against 0.27 with a plain copy, measured on bench/codec.ts's corpus.
const SNAPPY_OPTS = { asBuffer: true, copyOutputData: true } as const;

/** A raw-snappy body (Loki's protobuf encoding) → its bytes; BodyDecodeError when corrupt. */
export function unsnappy(raw: Buffer): Buffer {
  try {
    return snappy.uncompressSync(raw, SNAPPY_OPTS) as Buffer;
  } catch (err) {
    throw new BodyDecodeError(`snappy decode error: ${(err as Error).message}`);
  }
}

function isStringMap(v: unknown): v is Record<string, string> {
  return (
    typeof v === "object" &&
    v !== null &&
    !Array.isArray(v) &&
    Object.values(v).every((x) => typeof x === "string")
  );
}

function decodeJson(raw: Buffer): DecodedStream[] {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString("utf8"));
  } catch (err) {
    throw new BodyDecodeError(`JSON parse error: ${(err as Error).message}`);
  }
  const streams = (body as { streams?: unknown }).streams;
  if (!Array.isArray(streams)) throw new BodyDecodeError('JSON body has no "streams" array');
  return streams.map((s: { stream?: unknown; values?: unknown }, si) => {
    if (!isStringMap(s.stream)) throw new BodyDecodeError(`streams[${si}].stream is not a string map`);
    if (!Array.isArray(s.values)) throw new BodyDecodeError(`streams[${si}].values is not an array`);
    const entries = s.values.map((v: unknown, vi): DecodedEntry => {
      const where = `streams[${si}].values[${vi}]`;
      if (!Array.isArray(v) || v.length < 2 || v.length > 3)
        throw new BodyDecodeError(`${where} is not [ts, line, meta?]`);
      const [ts, line, meta] = v as unknown[];
      if (typeof ts !== "string" || !/^\d+$/.test(ts))
        throw new BodyDecodeError(`${where} timestamp is not a ns string`);
      if (typeof line !== "string") throw new BodyDecodeError(`${where} line is not a string`);
      if (meta !== undefined && !isStringMap(meta))
        throw new BodyDecodeError(`${where} metadata is not a string map`);
      const metadata = meta ?? {};
      let metadataCountBound = 0;
      let metadataLengthBound = 0;
      for (const k in metadata) {
        metadataCountBound++;
        metadataLengthBound += k.length + metadata[k]!.length;
      }
      return {
        timestampNs: BigInt(ts),
        line,
        metadata,
        lineBound: line.length,
        metadataCountBound,
        metadataLengthBound,
      };
    });
    return { labels: s.stream, entries };
  });
}

/** Body → streams; gzip Content-Encoding is undone first, protobuf is always raw-snappy (as Loki). */
export function decodePushBody(
  body: Buffer,
  contentType: string | undefined,
  contentEncoding: string | undefined,
  maxBytes: number,
): DecodedStream[] {
  let raw = body;
  const encoding = (contentEncoding ?? "").trim().toLowerCase();
  if (encoding === "gzip") {
    try {
      raw = gunzipSync(body, { maxOutputLength: maxBytes + 1 });
    } catch (err) {
      if ((err as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") throw tooLarge(maxBytes);
      throw new BodyDecodeError(`gzip decode error: ${(err as Error).message}`);
    }
  } else if (encoding !== "" && encoding !== "identity" && encoding !== "snappy") {
    throw new BodyDecodeError(`unsupported Content-Encoding ${encoding}`, 415);
  }
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === "application/json") {
    if (raw.length > maxBytes) throw tooLarge(maxBytes);
    return decodeJson(raw);
  }
  if (type === "application/x-protobuf") {
    const plain = unsnappy(raw);
    if (plain.length > maxBytes) throw tooLarge(maxBytes);
    return decodePushRequest(plain);
  }
  throw new BodyDecodeError(`unsupported Content-Type ${JSON.stringify(contentType ?? "")}`, 415);
}

function tooLarge(maxBytes: number): BodyDecodeError {
  return new BodyDecodeError(`request body too large: decompressed size exceeds ${maxBytes} bytes`, 413);
}
