// Failure classes of the Pub/Sub client and the gRPC status reading the source classifies on (§3.6).
import { status, type Metadata } from "@grpc/grpc-js";
import { Sf2LokiError } from "../../errors.ts";

/** A writer schema could not be fetched or parsed. Not poison: the stream reconnects and retries. */
export class SchemaFetchError extends Sf2LokiError {
  readonly schemaId: string;
  constructor(schemaId: string, message: string, options?: { cause?: unknown }) {
    super("SF2LOKI_PUBSUB_SCHEMA", message, options);
    this.schemaId = schemaId;
  }
}

/** No FetchResponse of any kind within the watchdog window: a half-open stream, cancelled. */
export class StreamStalledError extends Sf2LokiError {
  constructor(topic: string, windowMs: number) {
    super(
      "SF2LOKI_PUBSUB_STALLED",
      `Pub/Sub stream for ${topic} sent nothing (not even a keepalive) for ${Math.round(windowMs / 1000)} s; reconnecting`,
    );
  }
}

interface GrpcLikeError {
  code: number;
  details?: string;
  metadata?: Metadata;
}

export function isGrpcError(err: unknown): err is GrpcLikeError {
  return typeof err === "object" && err !== null && typeof (err as { code?: unknown }).code === "number";
}

export function grpcCode(err: unknown): number | undefined {
  return isGrpcError(err) ? err.code : undefined;
}

export function isUnauthenticated(err: unknown): boolean {
  return grpcCode(err) === status.UNAUTHENTICATED;
}

/** Salesforce's error code for a replay id it cannot resume from is in this family. */
export const CORRUPTED_REPLAY_MARKER = "replayid.corrupted";

/** Header names every gRPC response carries; they say nothing about the error itself. */
const TRANSPORT_KEYS = new Set(["content-type", "date", "server", "user-agent", "te", "content-length"]);

/**
 * What an INVALID_ARGUMENT's trailers say about the replay id (#65): `confirmed` when an error
 * trailer names a corrupted replay id, `no-trailer` when there are no error trailers at all (the
 * legacy heuristic also treats that as corruption), `other` when trailers point elsewhere.
 */
export function replayRejection(err: unknown): "confirmed" | "no-trailer" | "other" {
  const md = isGrpcError(err) ? err.metadata : undefined;
  let sawTrailer = false;
  for (const [key, value] of Object.entries(md?.getMap() ?? {})) {
    if (TRANSPORT_KEYS.has(key) || key.startsWith("grpc-")) continue;
    sawTrailer = true;
    const text = Buffer.isBuffer(value) ? value.toString("utf8") : value;
    if (text.toLowerCase().includes(CORRUPTED_REPLAY_MARKER)) return "confirmed";
  }
  return sawTrailer ? "other" : "no-trailer";
}

/** One line for logs: `UNAVAILABLE: Connection dropped` or the error's message. */
export function describeGrpcError(err: unknown): string {
  if (isGrpcError(err)) {
    const name = (status as unknown as Record<number, string>)[err.code] ?? String(err.code);
    return `${name}: ${err.details ?? ""}`;
  }
  return err instanceof Error ? err.message : String(err);
}
