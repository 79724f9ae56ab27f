// What a decoded Loki push body is, whichever decoder read it: the shapes loki-ingest.ts validates and
// the error every decoder throws for a body that is not a push request.

export interface DecodedEntry {
  /** Nanoseconds since the epoch; the protobuf decoder builds the BigInt on first read, not per entry. */
  readonly timestampNs: bigint;
  readonly line: string;
  readonly metadata: Readonly<Record<string, string>>;
  /**
   * Upper bounds, free to read, that let validation skip measuring: ≥ line.length, ≥ the number of
   * metadata names, ≥ the total length of metadata names and values (UTF-16 units). The protobuf
   * decoder gives byte counts off the wire (UTF-8 never decodes to more units than bytes).
   */
  readonly lineBound: number;
  readonly metadataCountBound: number;
  readonly metadataLengthBound: number;
}

export interface DecodedStream {
  /** Protobuf carries the selector text; JSON carries a label object. */
  labels: string | Record<string, string>;
  entries: DecodedEntry[];
}

/** The client sent something that is not a well-formed push request. */
export class BodyDecodeError extends Error {
  readonly status: number;
  constructor(message: string, status = 400) {
    super(message);
    this.status = status;
  }
}
