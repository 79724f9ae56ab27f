// What an OTLP/HTTP receiver answered (OTLP spec, "OTLP/HTTP Response"): a 2xx carries an
// ExportLogsServiceResponse whose partial_success counts the records it rejected, a failure a
// google.rpc.Status whose message says why. Loki's /otlp/v1/logs answers 204 with no body, and a
// refusal as a 400 whose Status message is the same text its push API sends (application/octet-stream).
// Both are read by hand: two small messages do not need a protobuf runtime on the daemon's path.
import type { Answer } from "../wire/push-service.ts";

export interface PartialSuccess {
  readonly rejected: number;
  readonly message: string;
}

/** One top-level field of a protobuf message: a varint's value, or a length-delimited field's bytes. */
interface Field {
  readonly number: number;
  readonly varint: number | undefined;
  readonly bytes: Buffer | undefined;
}

/** The fields of `buf`, or undefined when it is not a well-formed message of varint/len/fixed fields. */
function fields(buf: Buffer): Field[] | undefined {
  const out: Field[] = [];
  let pos = 0;
  const varint = (): number | undefined => {
    let v = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (pos >= buf.length) return undefined;
      const b = buf[pos++]!;
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
      scale *= 128;
    }
    return undefined;
  };
  while (pos < buf.length) {
    const key = varint();
    if (key === undefined || key < 8) return undefined;
    const number = Math.floor(key / 8);
    const wire = key % 8;
    if (wire === 0) {
      const v = varint();
      if (v === undefined) return undefined;
      out.push({ number, varint: v, bytes: undefined });
    } else if (wire === 2) {
      const len = varint();
      if (len === undefined || pos + len > buf.length) return undefined;
      out.push({ number, varint: undefined, bytes: buf.subarray(pos, pos + len) });
      pos += len;
    } else if (wire === 1 || wire === 5) {
      pos += wire === 1 ? 8 : 4;
      if (pos > buf.length) return undefined;
    } else {
      return undefined;
    }
  }
  return out;
}

function isJson(answer: Answer): boolean {
  const type = answer.headers["content-type"];
  return typeof type === "string" && type.toLowerCase().includes("json");
}

function jsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The partial_success of a 2xx, or undefined when the receiver rejected nothing (no body, an empty
 * message, rejected_log_records 0, or a body that is no ExportLogsServiceResponse).
 */
export function readPartialSuccess(answer: Answer): PartialSuccess | undefined {
  if (answer.raw.length === 0) return undefined;
  let rejected = 0;
  let message = "";
  if (isJson(answer)) {
    const partial = jsonObject(answer.text)?.partialSuccess as Record<string, unknown> | undefined;
    rejected = Number(partial?.rejectedLogRecords ?? 0);
    message = typeof partial?.errorMessage === "string" ? partial.errorMessage : "";
  } else {
    // ExportLogsServiceResponse.partial_success = 1 { rejected_log_records = 1; error_message = 2 }
    const partial = fields(answer.raw)?.find((f) => f.number === 1)?.bytes;
    for (const f of (partial && fields(partial)) ?? []) {
      if (f.number === 1 && f.varint !== undefined) rejected = f.varint;
      if (f.number === 2 && f.bytes) message = f.bytes.toString("utf8");
    }
  }
  return Number.isFinite(rejected) && rejected > 0 ? { rejected, message } : undefined;
}

/** The words of a failure: google.rpc.Status.message (protobuf or JSON), else the body as text. */
export function readFailureMessage(answer: Answer): string {
  if (isJson(answer)) {
    const message = jsonObject(answer.text)?.message;
    return typeof message === "string" ? message : answer.text;
  }
  // google.rpc.Status { code = 1; message = 2; details = 3 }: a text body rarely parses as one, and
  // when it does it names no message field 2 of valid UTF-8, so the text is kept.
  const message = fields(answer.raw)
    ?.find((f) => f.number === 2 && f.bytes)
    ?.bytes?.toString("utf8");
  return message !== undefined && message !== "" && !message.includes("\uFFFD") ? message : answer.text;
}
