// The Loki sink: caps lines, drops locally what Loki's limits refuse, pushes, reads Loki's 400s per
// entry, and bisects only what an answer leaves open (spec B §4.8, issue #11; docs/egress.md).
import { metrics, type Meter } from "@opentelemetry/api";
import type { Dispatcher } from "undici";
import type { Batch, LogEntry } from "../../model.ts";
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
import { attribute, storedOf } from "../receiving-loki/attribute.ts";
import { pushByStream, type DeliverContext, type PushShaping } from "../receiving-loki/prepare.ts";
import { LOKI_DEFAULT_LIMITS } from "../receiving-loki/limits.ts";
import { parseRefusals } from "../receiving-loki/refusals.ts";
import { authHeaders } from "../wire/auth.ts";
import { guardStaticLabels, renderLabels } from "../receiving-loki/labels.ts";
import { deliverIsolating } from "../wire/isolate.ts";
import { AcceptedStreams } from "../wire/accepted-streams.ts";
import { closePool, parsePushUrl, present } from "../wire/endpoint.ts";
import { readTlsFiles } from "../../util/tls-files.ts";
import { createLokiSinkMetrics, type LokiSinkMetrics } from "../receiving-loki/metrics.ts";
import { encodeRequest } from "./request.ts";
import {
  LokiRejectedError,
  LokiService,
  createLokiPool,
  LOKI_DEADLINES,
  type LokiDeadlines,
} from "./service.ts";
import { LokiLookup, lookupHorizonOf, queryBaseOf } from "../receiving-loki/lookup.ts";
import { tenantPacerFor, type TenantPacer } from "../receiving-loki/tenant-pacer.ts";
import { wireFormatOf, type LokiSinkSettings, type WireFormat } from "./settings.ts";

export interface LokiSinkDeps {
  clock?: Clock;
  logger?: Logger;
  meter?: Meter;
  /** An injected dispatcher is the caller's to close; otherwise the sink owns a keep-alive Pool. */
  dispatcher?: Dispatcher;
  /** Push deadlines (tests shorten them); default LOKI_DEADLINES. */
  deadlines?: LokiDeadlines;
  /** Where its settings are in the config, for operator messages: `sink.loki` or `orgs[<org>].sink.loki`. */
  configKey?: string;
}

function rejectionReason(status: number): string {
  return status === 413 ? "oversized_413" : "bad_request";
}

export class LokiSink implements Sink {
  readonly #format: WireFormat;
  /** Its line cap and the Loki limits it checks before sending (loki/prepare.ts). */
  readonly #shaping: PushShaping;
  readonly #service: LokiService;
  readonly #metrics: LokiSinkMetrics;
  readonly #logger: Logger;
  readonly #ownedPool: Dispatcher | undefined;
  readonly #clock: Clock;
  /** Splits and paces pushes once Loki names the tenant's ingestion limit in a 429. */
  readonly #pacer: TenantPacer;
  /** Answers what Loki already holds (`sink.loki.reconcile`), with this sink's tenant and credentials. */
  readonly lookup: LokiLookup | undefined;

  constructor(settings: LokiSinkSettings, deps: LokiSinkDeps = {}) {
    guardStaticLabels(settings.labels);
    const key = deps.configKey ?? "sink.loki";
    const url = parsePushUrl(settings.url, key, "https://host/loki/api/v1/push");
    const headers = authHeaders(settings, key);
    this.#logger = (deps.logger ?? silentLogger).child({ component: "loki-sink" });
    this.#format = wireFormatOf(settings);
    if (settings.encoding === "json" && settings.compression === "snappy") {
      // snappy is the key's default (for protobuf), so failing here would break configs that ran
      // under the Python sf2loki; say once what actually happens instead.
      this.#logger.warn(
        "sink.loki.compression snappy does not apply to encoding json; sending uncompressed JSON " +
          "(set compression: gzip or none to silence this)",
      );
    }
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
    this.#ownedPool = deps.dispatcher ? undefined : createLokiPool(url.origin, deps.deadlines, tls);
    this.#service = new LokiService({
      url,
      where: `${url.origin}${url.pathname}`,
      configKey: key,
      authHeaders: headers,
      dispatcher: deps.dispatcher ?? this.#ownedPool!,
      clock: this.#clock,
      logger: this.#logger,
      bytesPushed: this.#metrics.bytesPushed,
      ...(deps.deadlines ? { deadlines: deps.deadlines } : {}),
    });
    this.#pacer = tenantPacerFor(url, key, present(settings.tenant_id), {
      clock: this.#clock,
      logger: this.#logger,
      meter: deps.meter ?? metrics.getMeter("sf2loki"),
    });
    const reconcile = settings.reconcile;
    this.lookup = reconcile?.enabled
      ? new LokiLookup({
          base: present(reconcile.query_url) ?? queryBaseOf(url.href),
          authHeaders: headers,
          maxLineBytes: settings.batch.max_line_bytes,
          deadlines: deps.deadlines ?? LOKI_DEADLINES,
          tls,
          ...lookupHorizonOf(reconcile),
        })
      : undefined;
  }

  async push(
    batch: Batch,
    signal?: AbortSignal,
    onDropped?: DropListener,
    onLanded?: LandListener,
    slots?: RequestSlots,
  ): Promise<PushResult> {
    return pushByStream(batch, this.#shaping, { signal, onDropped, onLanded, slots }, (stream, ctx) =>
      this.#deliver(stream, ctx),
    );
  }

  /**
   * Pushes `entries` (wire/isolate.ts): a 400 is read per entry, what Loki names is dropped with its
   * words, what it does not name was stored and is not sent again; a 429 naming the tenant's limit
   * is learned and the part goes again, smaller and paced. Nothing of a rate-limited part was stored.
   */
  async #deliver(entries: readonly LogEntry[], ctx: DeliverContext): Promise<void> {
    await deliverIsolating(entries, ctx, {
      ...this.#pacer.hooks(ctx.signal),
      send: async (part) =>
        this.#service.send(await encodeRequest(part, this.#format), ctx.signal, ctx.slots),
      refusal: (err) => (err instanceof LokiRejectedError ? err : undefined),
      settle: (part, err) => this.#settle(part, err, ctx),
      isolated: (entry, err) => {
        this.#isolated(entry, err, ctx);
      },
      reason: (err) => rejectionReason(err.status),
    });
  }

  /** Drops what a 400 names; returns what it leaves open (everything, for a 413). */
  #settle(part: readonly LogEntry[], err: LokiRejectedError, ctx: DeliverContext): readonly LogEntry[] {
    if (err.status !== 400) return part;
    const { refused, unsettled } = attribute(part, parseRefusals(err.body));
    ctx.drops.add(refused);
    if (ctx.onLanded && refused.length + unsettled.length < part.length)
      ctx.onLanded(storedOf(part, { refused, unsettled }));
    if (refused.length > 0) {
      this.#logger.debug(
        { entries: part.length, refused: refused.length, unsettled: unsettled.length },
        "Loki refused some entries of a push and stored the rest",
      );
    }
    return unsettled;
  }

  /** A lone entry Loki refused without naming it: dropped, or Permanent when it was the batch. */
  #isolated(entry: LogEntry, err: LokiRejectedError, ctx: DeliverContext): void {
    const reason = rejectionReason(err.status);
    const message =
      `Loki refused an entry of stream ${renderLabels(entry.labels)} at ${entry.timestampNs}ns with ` +
      `HTTP ${err.status} (${err.detail}); it is dropped`;
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

export function createLokiSink(settings: LokiSinkSettings, deps?: LokiSinkDeps): LokiSink {
  return new LokiSink(settings, deps);
}
