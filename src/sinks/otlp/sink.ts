// The OTLP sink: OTLP/HTTP protobuf exports of the same batches the Loki sink pushes, behind the same
// pipeline (caps lines, drops locally what Loki's limits refuse, isolates refused records). Answers
// per the OTLP/HTTP spec: a 2xx's partial_success rejects records, a 400 is permanent (what it names
// is dead-lettered, the rest was stored or is isolated), 429/502/503/504 and other 5xx are retried
// honouring Retry-After. docs/otlp.md says how a rejection is attributed to records.
import { metrics, type Meter } from "@opentelemetry/api";
import type { Dispatcher } from "undici";
import { ConfigError, Sf2LokiError } from "../../errors.ts";
import { msToNs, type Batch, type Labels, type LogEntry } from "../../model.ts";
import { silentLogger, type Logger } from "../../obs/logger.ts";
import { systemClock, type Clock } from "../../util/clock.ts";
import {
  PermanentSinkError,
  type DropListener,
  type LandListener,
  type PushResult,
  type RequestSlots,
  type Sink,
} from "../sink.ts";
import { LOKI_DEFAULT_LIMITS } from "../receiving-loki/limits.ts";
import { attribute, storedOf } from "../receiving-loki/attribute.ts";
import { pushByStream, type DeliverContext, type PushShaping } from "../receiving-loki/prepare.ts";
import { parseRefusals, type ParsedRefusals } from "../receiving-loki/refusals.ts";
import { createLokiSinkMetrics, type LokiSinkMetrics } from "../receiving-loki/metrics.ts";
import { authHeaders } from "../wire/auth.ts";
import { closePool, parsePushUrl, present } from "../wire/endpoint.ts";
import { readTlsFiles, type TlsOptions } from "../../util/tls-files.ts";
import { deliverIsolating } from "../wire/isolate.ts";
import { AcceptedStreams } from "../wire/accepted-streams.ts";
import {
  DETAIL_MAX_BYTES,
  PUSH_DEADLINES,
  PushService,
  collapse,
  createPushPool,
  type Answer,
  type PushDeadlines,
} from "../wire/push-service.ts";
import { readFailureMessage, readPartialSuccess } from "./answer.ts";
import { STREAM_ATTRIBUTE, STREAM_LABEL, lokiIndexLabels, lokiQueryOf } from "./mapping.ts";
import { LokiLookup, lookupHorizonOf } from "../receiving-loki/lookup.ts";
import { LokiRateLimitedError, parseRateLimited } from "../receiving-loki/rate-limited.ts";
import { tenantPacerFor, type TenantPacer } from "../receiving-loki/tenant-pacer.ts";
import { renderLabels } from "../receiving-loki/labels.ts";
import { encodeOtlpRequest, type OtlpRequestSettings } from "./request.ts";
import type { OtlpSinkSettings } from "./settings.ts";

export interface OtlpSinkDeps {
  clock?: Clock;
  logger?: Logger;
  meter?: Meter;
  /** An injected dispatcher is the caller's to close; otherwise the sink owns a keep-alive Pool. */
  dispatcher?: Dispatcher;
  deadlines?: PushDeadlines;
  /** Where its settings are in the config, for operator messages: `sink.otlp` or `orgs[<org>].sink.otlp`. */
  configKey?: string;
}

/** A 400 from Loki names every refused record; 1 MiB holds several thousand. */
const REJECTION_BODY_MAX_BYTES = 1_048_576;
/** An ExportLogsServiceResponse: a count and a message. */
const SUCCESS_BODY_MAX_BYTES = 65_536;

/** Headers the sink sets itself: an operator's `headers` may not replace them. */
const OWN_HEADERS = new Set(["content-type", "content-encoding", "content-length", "authorization", "host"]);

/** The receiver refused records: a 400/413, or a 2xx whose partial_success rejected some. */
export class OtlpRejectedError extends Sf2LokiError {
  readonly status: number;
  readonly detail: string;
  /** The receiver's words (a Status message, or Loki's text), for reading per record. */
  readonly words: string;
  /** For a partial success: how many records it rejected. */
  readonly rejected: number | undefined;
  constructor(status: number, message: string, rejected?: number) {
    const detail = collapse(message.slice(0, DETAIL_MAX_BYTES));
    super(
      "SF2LOKI_OTLP_REJECTED",
      rejected === undefined
        ? `the OTLP receiver rejected the export with HTTP ${status}: ${detail}`
        : `the OTLP receiver accepted the export with HTTP ${status} but rejected ${rejected} records: ${detail}`,
    );
    this.status = status;
    this.detail = detail;
    this.words = message;
    this.rejected = rejected;
  }
}

function keepBytes(status: number): number {
  if (status >= 200 && status < 300) return SUCCESS_BODY_MAX_BYTES;
  return status === 400 ? REJECTION_BODY_MAX_BYTES : DETAIL_MAX_BYTES;
}

/**
 * What an answer says about the data: a 400/413 refuses records; a 429 from a Loki may name the
 * tenant's ingestion limit (its OTLP endpoint limits as its push API does), and then the sink splits
 * and paces instead of backing off blind (loki/tenant-pacer.ts).
 */
function otlpRefusal(where: string): (answer: Answer) => Error | undefined {
  return (answer) => {
    const { status } = answer;
    if (status === 400 || status === 413) return new OtlpRejectedError(status, readFailureMessage(answer));
    if (status !== 429) return undefined;
    const words = readFailureMessage(answer);
    const notice = parseRateLimited(words);
    return notice ? new LokiRateLimitedError(where, notice, collapse(words)) : undefined;
  };
}

function rejectionReason(err: OtlpRejectedError): string {
  if (err.rejected !== undefined) return "partial_rejected";
  return err.status === 413 ? "oversized_413" : "bad_request";
}

/** Operator headers, lower-cased, without the ones the sink owns; refused by name when they collide. */
function extraHeaders(headers: Record<string, string>, key: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (OWN_HEADERS.has(lower) || lower === "x-scope-orgid") {
      throw new ConfigError(
        `${key}.headers.${name} is set by the sink itself; use ${key}.tenant_id / auth_token(_file) for auth and the tenant, and remove it.`,
      );
    }
    out[lower] = value;
  }
  return out;
}

/** The labels of the one stream a refusal names throughout, or undefined (none, several, unparsed). */
function onlyStreamNamed(parsed: ParsedRefusals): Labels | undefined {
  const named = [...parsed.refusals, ...parsed.reports];
  const first = named[0];
  if (first?.labels === undefined) return undefined;
  return named.every((r) => r.rawLabels === first.rawLabels) ? first.labels : undefined;
}

/** Loki's OTLP path: its query API is what precedes it. */
const LOKI_OTLP_PATH = "/otlp/v1/logs";

/**
 * The reconcile lookup when the receiver is a Loki whose query API is known: beside its OTLP path,
 * or at `reconcile.query_url`. Another receiver (a Collector) has no read path: at least once.
 */
function lookupOf(
  settings: OtlpSinkSettings,
  url: URL,
  headers: Readonly<Record<string, string>>,
  deadlines: PushDeadlines,
  tls: TlsOptions | undefined,
): LokiLookup | undefined {
  const reconcile = settings.reconcile;
  if (!reconcile?.enabled) return undefined;
  const base =
    present(reconcile.query_url) ??
    (url.pathname.endsWith(LOKI_OTLP_PATH)
      ? `${url.origin}${url.pathname.slice(0, -LOKI_OTLP_PATH.length)}`
      : undefined);
  if (base === undefined) return undefined;
  return new LokiLookup({
    base,
    authHeaders: headers,
    maxLineBytes: settings.batch.max_line_bytes,
    deadlines,
    queryOf: (labels) => lokiQueryOf(labels, settings.service_name),
    tls,
    ...lookupHorizonOf(reconcile),
  });
}

export class OtlpSink implements Sink {
  /** Its line cap and the Loki limits it checks before sending (loki/prepare.ts). */
  readonly #shaping: PushShaping;
  readonly #request: OtlpRequestSettings;
  readonly #service: PushService;
  readonly #metrics: LokiSinkMetrics;
  readonly #logger: Logger;
  readonly #ownedPool: Dispatcher | undefined;
  readonly #clock: Clock;
  /** Loki's stream labels of each label set, memoised per labels object (a run shares one). */
  readonly #lokiLabels = new WeakMap<Labels, Labels>();
  #warnedSharedStream = false;
  /** Splits and paces exports once a Loki names the tenant's ingestion limit in a 429. */
  readonly #pacer: TenantPacer;
  /** What a Loki behind the OTLP endpoint already holds (`sink.loki.reconcile`), or undefined. */
  readonly lookup: LokiLookup | undefined;

  constructor(settings: OtlpSinkSettings, deps: OtlpSinkDeps = {}) {
    const key = deps.configKey ?? "sink.otlp";
    const url = parsePushUrl(settings.url, key, "http://loki:3100/otlp/v1/logs");
    const headers = { ...extraHeaders(settings.headers, key), ...authHeaders(settings, key) };
    this.#logger = (deps.logger ?? silentLogger).child({ component: "otlp-sink" });
    this.#request = { serviceName: settings.service_name, gzip: settings.compression === "gzip" };
    this.#clock = deps.clock ?? systemClock;
    this.#metrics = createLokiSinkMetrics(deps.meter ?? metrics.getMeter("sf2loki"));
    const limits = settings.limits ?? LOKI_DEFAULT_LIMITS;
    this.#shaping = {
      maxLineBytes: settings.batch.max_line_bytes,
      limits,
      clock: this.#clock,
      linesTruncated: this.#metrics.linesTruncated,
      accepted: new AcceptedStreams(this.#clock, limits),
    };
    const tls = readTlsFiles(settings.tls, `${key}.tls`);
    this.#ownedPool = deps.dispatcher ? undefined : createPushPool(url.origin, deps.deadlines, tls);
    this.#pacer = tenantPacerFor(url, key, present(settings.tenant_id), {
      clock: this.#clock,
      logger: this.#logger,
      meter: deps.meter ?? metrics.getMeter("sf2loki"),
    });
    this.lookup = lookupOf(settings, url, headers, deps.deadlines ?? PUSH_DEADLINES, tls);
    this.#service = new PushService({
      url,
      where: `${url.origin}${url.pathname}`,
      configKey: key,
      peer: "the OTLP receiver",
      headers,
      dispatcher: deps.dispatcher ?? this.#ownedPool!,
      clock: this.#clock,
      logger: this.#logger,
      bytesPushed: this.#metrics.bytesPushed,
      keepBytes,
      refusal: otlpRefusal(`${url.origin}${url.pathname}`),
      deadlines: deps.deadlines ?? PUSH_DEADLINES,
    });
  }

  async push(
    batch: Batch,
    signal?: AbortSignal,
    onDropped?: DropListener,
    onLanded?: LandListener,
    slots?: RequestSlots,
  ): Promise<PushResult> {
    // One sf2loki stream per export: Loki answers a request for its last stream only (per-stream.ts).
    return pushByStream(batch, this.#shaping, { signal, onDropped, onLanded, slots }, (stream, ctx) =>
      this.#deliver(stream, ctx),
    );
  }

  async #deliver(entries: readonly LogEntry[], ctx: DeliverContext): Promise<void> {
    await deliverIsolating(entries, ctx, {
      ...this.#pacer.hooks(ctx.signal),
      send: (part) => this.#send(part, ctx.signal, ctx.slots),
      refusal: (err) => (err instanceof OtlpRejectedError ? err : undefined),
      settle: (part, err) => this.#settle(part, err, ctx),
      isolated: (entry, err) => {
        this.#isolated(entry, err, ctx);
      },
      reason: rejectionReason,
    });
  }

  async #send(
    part: readonly LogEntry[],
    signal: AbortSignal | undefined,
    slots: RequestSlots | undefined,
  ): Promise<void> {
    const request = await encodeOtlpRequest(part, this.#request, msToNs(this.#clock.now()));
    const answer = await this.#service.send(request, signal, slots);
    const partial = readPartialSuccess(answer);
    if (partial) throw new OtlpRejectedError(answer.status, partial.message, partial.rejected);
  }

  #labelsOf = (entry: LogEntry): Labels => {
    let labels = this.#lokiLabels.get(entry.labels);
    if (!labels) {
      labels = lokiIndexLabels(entry.labels, this.#request.serviceName);
      this.#lokiLabels.set(entry.labels, labels);
    }
    return labels;
  };

  /**
   * What a refusal names, read as Loki's words (Loki's /otlp/v1/logs refuses as its push API does:
   * a 400 naming each record, the rest stored). A partial success the words do not account for
   * exactly is dead-lettered whole: OTLP does not say which records were rejected, and sending any
   * again could store a copy of one that was kept. Returns what is left open (for bisection).
   */
  #settle(part: readonly LogEntry[], err: OtlpRejectedError, ctx: DeliverContext): readonly LogEntry[] {
    const parsed = parseRefusals(err.words);
    // An export carries one sf2loki stream, which is one Loki stream whatever Loki indexes of it
    // (sf2loki.stream or not): the stream Loki names, when it names one, is this export's.
    const named = onlyStreamNamed(parsed);
    const { refused, unsettled } = attribute(part, parsed, named ? () => named : this.#labelsOf);
    if (named && !(STREAM_LABEL in named) && refused.some((r) => r.reason === "too_far_behind"))
      this.#warnSharedStream(named);
    if (err.rejected !== undefined) {
      const exact = unsettled.length === 0 && refused.length === err.rejected;
      if (!exact) {
        const detail =
          `${err.detail} (the receiver rejected ${err.rejected} of ${part.length} records without naming ` +
          `them; all ${part.length} are dead-lettered, so a replay may store up to ${part.length - err.rejected} twice)`;
        this.#logger.warn({ rejected: err.rejected, records: part.length }, err.message);
        if (ctx.single && part.length === 1)
          throw new PermanentSinkError(err.message, "partial_rejected", { cause: err });
        ctx.drops.add(part.map((entry) => ({ entry, reason: "partial_rejected", detail })));
        return [];
      }
    }
    ctx.drops.add(refused);
    if (ctx.onLanded && refused.length + unsettled.length < part.length)
      ctx.onLanded(storedOf(part, { refused, unsettled }));
    return unsettled;
  }

  /**
   * Loki refused records as too far behind in a stream it keys without `sf2loki.stream`: an org's
   * EventLogFile rows and live events then share one Loki stream and the older ones keep being
   * refused. Said once a sink (every refused record is dead-lettered, so nothing is lost meanwhile).
   */
  #warnSharedStream(named: Labels): void {
    if (this.#warnedSharedStream) return;
    this.#warnedSharedStream = true;
    this.#logger.warn(
      { stream: renderLabels(named) },
      `Loki refused records as too far behind in stream ${renderLabels(named)}, which holds every ` +
        `source of the org because Loki does not index the ${STREAM_ATTRIBUTE} resource attribute: ` +
        `add it to Loki's limits_config.otlp_config.resource_attributes.attributes_config with ` +
        `action index_label (docs/otlp.md, "Streams"), then replay the dead letters ` +
        `(sf2loki deadletter replay)`,
    );
  }

  /** A lone record refused without being named: dropped, or Permanent when it was the batch. */
  #isolated(entry: LogEntry, err: OtlpRejectedError, ctx: DeliverContext): void {
    const reason = rejectionReason(err);
    const message =
      `the OTLP receiver refused a record of ${entry.labels.source ?? "?"}/${entry.labels.event_type ?? "?"} ` +
      `at ${entry.timestampNs}ns with HTTP ${err.status} (${err.detail}); it is dropped`;
    if (ctx.single) throw new PermanentSinkError(message, reason, { cause: err });
    this.#logger.warn({ reason, status: err.status }, message);
    ctx.drops.add([{ entry, reason, detail: err.detail }]);
  }

  /** Lets in-flight requests finish for up to 5 s, then tears the connections down. */
  async close(): Promise<void> {
    await this.lookup?.close();
    await closePool(this.#ownedPool, this.#clock);
  }
}

export function createOtlpSink(settings: OtlpSinkSettings, deps?: OtlpSinkDeps): OtlpSink {
  return new OtlpSink(settings, deps);
}
