// The ApexLog client (spec A §8): the compound-cursor listing over the Tooling API and the body
// download, retried as a whole (request and body) on transport errors, 429 and 5xx, so one
// transient failure does not cost the body (#93). Throttling still fails fast.
import { metrics, type Counter, type Meter } from "@opentelemetry/api";
import { pyStr } from "../egress/transforms-python.ts";
import { retry } from "../util/retry.ts";
import type { RestClient, SObjectRecord } from "./rest.ts";
import { SalesforceApiError, SalesforceTransportError } from "./rest-errors.ts";
import { soqlDatetime } from "./soql-datetime.ts";
import { soqlString } from "./soql-literals.ts";

export const APEXLOG_PAGE = 200;

export const APEXLOG_FIELDS = [
  "Id",
  "LogUserId",
  "LogLength",
  "Operation",
  "Request",
  "Status",
  "StartTime",
  "Application",
  "DurationMilliseconds",
  "Location",
] as const;

const NUMERIC = new Set(["LogLength", "DurationMilliseconds"]);

/**
 * `(StartTime > wm OR (StartTime = wm AND Id > 'last'))` when an Id at the watermark is known
 * (fix #39), else `StartTime >= wm`; every literal escaped (#150).
 */
export function apexLogQuery(
  watermark: string,
  sinceId: string | undefined,
  users: readonly string[],
): string {
  const wm = soqlDatetime(watermark);
  let where =
    sinceId === undefined
      ? `StartTime >= ${wm}`
      : `(StartTime > ${wm} OR (StartTime = ${wm} AND Id > ${soqlString(sinceId)}))`;
  if (users.length > 0) where += ` AND LogUser.Username IN (${users.map(soqlString).join(",")})`;
  return `SELECT ${APEXLOG_FIELDS.join(", ")} FROM ApexLog WHERE ${where} ORDER BY StartTime ASC, Id ASC LIMIT ${APEXLOG_PAGE}`;
}

/**
 * The metadata map of a listed log, as the Python version built it (its line and structured
 * metadata show it): every text field through `str()`, so a null is `"None"` and a missing field
 * `""`; the numbers as integers, 0 when null or unparseable.
 */
export function apexLogMetadata(record: SObjectRecord): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of APEXLOG_FIELDS) {
    const v = record[f];
    if (NUMERIC.has(f)) {
      const n = v === null || v === undefined ? 0 : Math.trunc(Number(v));
      out[f] = Number.isFinite(n) ? n : 0;
    } else out[f] = v === undefined ? "" : pyStr(v);
  }
  return out;
}

export class ApexLogClient {
  readonly #rest: RestClient;
  readonly #errors: Counter;
  readonly #bytes: Counter;

  constructor(opts: { rest: RestClient; meter?: Meter }) {
    this.#rest = opts.rest;
    const meter = opts.meter ?? metrics.getMeter("sf2loki");
    this.#errors = meter.createCounter("sf2loki_apexlog_download_errors", {
      description: "ApexLog body download failures",
    });
    this.#bytes = meter.createCounter("sf2loki_apexlog_download_bytes", {
      description: "ApexLog body bytes downloaded",
    });
  }

  async list(
    watermark: string,
    sinceId: string | undefined,
    users: readonly string[],
    signal: AbortSignal,
  ): Promise<SObjectRecord[]> {
    return this.#rest.queryAll(apexLogQuery(watermark, sinceId, users), {
      tooling: true,
      signal,
      where: "ApexLog listing",
    });
  }

  /** The body as text, or undefined when it turned out larger than `maxBytes`. */
  async body(id: string, maxBytes: number, signal: AbortSignal): Promise<string | undefined> {
    const where = `ApexLog body ${id}`;
    const path = this.#rest.path(`tooling/sobjects/ApexLog/${encodeURIComponent(id)}/Body`);
    try {
      return await retry(
        async () => {
          const download = await this.#rest.download(path, {
            signal,
            where,
            api: "apexlog_body",
            retry: false,
          });
          try {
            const text = await download.text(maxBytes);
            this.#bytes.add(download.bytes);
            return text;
          } finally {
            download.close();
          }
        },
        this.#rest.retryOptions(where, signal),
      );
    } catch (err) {
      if (!signal.aborted) {
        if (err instanceof SalesforceTransportError) this.#errors.add(1, { reason: "transport" });
        else if (err instanceof SalesforceApiError && err.status !== undefined) {
          this.#errors.add(1, { reason: `HTTP ${err.status}` });
        }
      }
      throw err;
    }
  }
}
