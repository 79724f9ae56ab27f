// The independent reference decoder for logproto.PushRequest: protobufjs loading proto/loki_push.proto.
// The sink's encoder and the receiver's decoder (loki-decode-fast.ts) are both hand-written, so the
// tests check each of them against this one; nothing on the receiver's hot path calls it.
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { BodyDecodeError, type DecodedStream } from "./loki-decoded.ts";

let pushRequestType: protobuf.Type | undefined;

function pushRequest(): protobuf.Type {
  pushRequestType ??= protobuf
    .loadSync(fileURLToPath(new URL("../../proto/loki_push.proto", import.meta.url)))
    .lookupType("logproto.PushRequest");
  return pushRequestType;
}

interface ProtoPush {
  streams?: {
    labels?: string;
    entries?: {
      timestamp?: { seconds?: string; nanos?: number };
      line?: string;
      structuredMetadata?: { name?: string; value?: string }[];
    }[];
  }[];
}

/** An uncompressed logproto.PushRequest → its streams, through protobufjs message objects. */
export function decodePushRequestReference(raw: Buffer): DecodedStream[] {
  let message: ProtoPush;
  try {
    const type = pushRequest();
    message = type.toObject(type.decode(raw), { longs: String, defaults: true });
  } catch (err) {
    throw new BodyDecodeError(`protobuf decode error: ${(err as Error).message}`);
  }
  return (message.streams ?? []).map((s) => ({
    labels: s.labels ?? "",
    entries: (s.entries ?? []).map((e) => {
      const line = e.line ?? "";
      const metadata = Object.fromEntries(
        (e.structuredMetadata ?? []).map((p) => [p.name ?? "", p.value ?? ""]),
      );
      const names = Object.keys(metadata);
      return {
        timestampNs: BigInt(e.timestamp?.seconds ?? "0") * 1_000_000_000n + BigInt(e.timestamp?.nanos ?? 0),
        line,
        metadata,
        lineBound: line.length,
        metadataCountBound: names.length,
        metadataLengthBound: names.reduce((n, k) => n + k.length + metadata[k]!.length, 0),
      };
    }),
  }));
}
