// Loki's JSON push body: the debugging encoding. Timestamps are exact integer-nanosecond strings,
// labels and metadata keys sorted, so the same batch always yields the same bytes.
import type { Labels } from "../../model.ts";
import type { StreamGroup } from "../receiving-loki/streams.ts";
import { sortedKeys } from "../wire/protobuf.ts";

function jsonObject(map: Labels): string {
  let out = "{";
  let first = true;
  for (const k of sortedKeys(map)) {
    out += (first ? "" : ",") + JSON.stringify(k) + ":" + JSON.stringify(map[k]);
    first = false;
  }
  return out + "}";
}

/** `{"streams":[{"stream":{...},"values":[["<ns>","<line>",{meta}],...]},...]}` as UTF-8. */
export function encodeJsonPush(streams: readonly StreamGroup[]): Buffer {
  const parts: string[] = ['{"streams":['];
  for (let si = 0; si < streams.length; si++) {
    const stream = streams[si]!;
    parts.push(si === 0 ? '{"stream":' : ',{"stream":', jsonObject(stream.labelSet), ',"values":[');
    for (let i = 0; i < stream.entries.length; i++) {
      const entry = stream.entries[i]!;
      parts.push(
        `${i === 0 ? "" : ","}["${entry.timestampNs.toString()}",${JSON.stringify(entry.line)},${jsonObject(entry.structuredMetadata)}]`,
      );
    }
    parts.push("]}");
  }
  parts.push("]}");
  return Buffer.from(parts.join(""), "utf8");
}
