// Validates decoded streams like Loki's distributor (and, for the out-of-order window, its
// ingester) and stores what passes. Like Loki, acceptance is per entry: valid entries of a request
// are kept even when others in it are refused, and the 400 names the refused ones in Loki's words.
// Like Loki 3.4.6 too, the ingester answers with its LAST stream's result only (instance.Push keeps
// the append error of the stream it pushed last): a stream's out-of-order refusal is reported when
// that stream was the request's last to reach the ingester, and is silent (204) when a later stream
// was stored whole. Measured against the real binary; the sinks send one stream per request for it.
import type { DecodedEntry, DecodedStream } from "./loki-decoded.ts";
import { LabelSyntaxError, canonicalLabels, labelSetProblem, parseLabelSelector } from "./loki-labels.ts";
import {
  groupedErrors,
  labelNameTooLong,
  labelValueTooLong,
  lineTooLong,
  MAX_IGNORED_STREAM_ERRORS,
  metadataTooLarge,
  metadataTooMany,
  outOfOrderReport,
  promLabels,
  tooManyLabelNames,
  tooNew,
  tooOld,
} from "./loki-messages.ts";
import type { AcceptedStore, LabelMap } from "./loki-store.ts";
import type { PoisonRule } from "./loki-faults.ts";

export interface IngestLimits {
  maxLineBytes: number;
  /** Per-stream out-of-order window in ms; undefined accepts any order (Loki's current default). */
  outOfOrderWindowMs: number | undefined;
  poison: PoisonRule | undefined;
  /** Loki's clock, for the age checks. */
  nowMs: number;
  /** `reject_old_samples_max_age`; undefined turns the check off. */
  rejectOldSamplesMaxAgeMs: number | undefined;
  /** `creation_grace_period`; undefined turns the check off. */
  creationGracePeriodMs: number | undefined;
  maxLabelNamesPerSeries: number;
  maxLabelNameLength: number;
  maxLabelValueLength: number;
  /** 0 disables. */
  maxStructuredMetadataBytes: number;
  /** 0 disables. */
  maxStructuredMetadataEntries: number;
  /** `-ingester.max-ignored-stream-errors`. */
  maxIgnoredStreamErrors: number;
  /** The request's tenant (see tenantOf in loki.ts): "fake" when it sent none, like Loki without auth. */
  tenant: string;
}

/** Loki's defaults, which the simulated receiver applies to whatever it is not told: no age checks. */
export function defaultIngestLimits(nowMs: number, tenant = "fake"): IngestLimits {
  return {
    maxLineBytes: 262_144,
    outOfOrderWindowMs: undefined,
    poison: undefined,
    nowMs,
    rejectOldSamplesMaxAgeMs: undefined,
    creationGracePeriodMs: undefined,
    maxLabelNamesPerSeries: 15,
    maxLabelNameLength: 1024,
    maxLabelValueLength: 2048,
    maxStructuredMetadataBytes: 65_536,
    maxStructuredMetadataEntries: 128,
    maxIgnoredStreamErrors: MAX_IGNORED_STREAM_ERRORS,
    tenant,
  };
}

export interface IngestResult {
  accepted: number;
  rejected: number;
  /** Streams in the request. */
  streams: number;
  /** Worst status among refusals (413 beats 400); 204 when all entries were accepted or the refusal went unreported. */
  status: number;
  /** The response body Loki would send. */
  body: string;
}

function resolveLabels(labels: string | LabelMap): LabelMap {
  return typeof labels === "string" ? parseLabelSelector(labels) : labels;
}

const utf8 = (s: string): number => Buffer.byteLength(s, "utf8");

/**
 * A UTF-16 code unit is at most 3 bytes of UTF-8 (a surrogate pair is 4 bytes for 2 units, a lone
 * surrogate becomes U+FFFD, 3 bytes), so a string whose length bound (DecodedEntry) is below limit/3
 * cannot break a byte limit and is neither measured nor, from protobuf, even made.
 */
const MAX_UTF8_PER_UNIT = 3;

/** Loki's structured metadata limits on one entry: bytes of names and values first, then count. */
function metadataProblem(entry: DecodedEntry, stream: string, limits: IngestLimits): string | undefined {
  if (entry.metadataCountBound === 0) return undefined;
  const maxBytes = limits.maxStructuredMetadataBytes;
  if (maxBytes > 0 && entry.metadataLengthBound * MAX_UTF8_PER_UNIT > maxBytes) {
    const metadata = entry.metadata;
    let bytes = 0;
    for (const k in metadata) bytes += utf8(k) + utf8(metadata[k]!);
    if (bytes > maxBytes) return metadataTooLarge(stream, bytes, maxBytes);
  }
  const maxEntries = limits.maxStructuredMetadataEntries;
  if (maxEntries > 0 && entry.metadataCountBound > maxEntries) {
    const count = Object.keys(entry.metadata).length;
    if (count > maxEntries) return metadataTooMany(stream, count, maxEntries);
  }
  return undefined;
}

/** The distributor's ValidateLabels beyond syntax: names per series, name and value lengths. */
function labelLimitProblem(labels: LabelMap, raw: string, limits: IngestLimits): string | undefined {
  const names = Object.keys(labels).sort();
  const counted = names.length - (names.includes("service_name") ? 1 : 0);
  if (counted > limits.maxLabelNamesPerSeries) {
    return tooManyLabelNames(raw, counted, limits.maxLabelNamesPerSeries);
  }
  for (const name of names) {
    if (utf8(name) > limits.maxLabelNameLength) return labelNameTooLong(raw, name);
    if (utf8(labels[name]!) > limits.maxLabelValueLength) return labelValueTooLong(raw, labels[name]!);
  }
  return undefined;
}

export function ingest(streams: DecodedStream[], store: AcceptedStore, limits: IngestLimits): IngestResult {
  const result: IngestResult = { accepted: 0, rejected: 0, streams: streams.length, status: 204, body: "" };
  const errors: string[] = [];
  /** The ingester's answer: the out-of-order report of the last stream that reached it, if any. */
  let ingesterReport: string | undefined;
  const refuse = (status: number, message: string | undefined, count = 1): void => {
    result.rejected += count;
    if (message !== undefined) errors.push(message);
    if (result.status === 204 || status > result.status) result.status = status;
  };
  const nowNs = BigInt(Math.floor(limits.nowMs)) * 1_000_000n;
  const oldestNs =
    limits.rejectOldSamplesMaxAgeMs === undefined
      ? undefined
      : nowNs - BigInt(Math.round(limits.rejectOldSamplesMaxAgeMs)) * 1_000_000n;
  const newestNs =
    limits.creationGracePeriodMs === undefined
      ? undefined
      : nowNs + BigInt(Math.round(limits.creationGracePeriodMs)) * 1_000_000n;
  const windowNs =
    limits.outOfOrderWindowMs === undefined ? undefined : BigInt(Math.round(limits.outOfOrderWindowMs * 1e6));
  const { maxLineBytes, poison } = limits;
  for (const stream of streams) {
    let labels: LabelMap;
    try {
      labels = resolveLabels(stream.labels);
    } catch (err) {
      if (!(err instanceof LabelSyntaxError)) throw err;
      refuse(400, `stream ${JSON.stringify(stream.labels)}: ${err.message}`, stream.entries.length);
      continue;
    }
    const problem = labelSetProblem(labels);
    if (problem !== undefined) {
      refuse(400, `stream ${canonicalLabels(labels)}: ${problem}`, stream.entries.length);
      continue;
    }
    const raw = typeof stream.labels === "string" ? stream.labels : promLabels(labels);
    const labelProblem = labelLimitProblem(labels, raw, limits);
    if (labelProblem !== undefined) {
      refuse(400, labelProblem, stream.entries.length);
      continue;
    }
    const key = canonicalLabels(labels);
    const name = promLabels(labels);
    const ignored: { ts: bigint; oldest: bigint }[] = [];
    /** Whether any entry passed the distributor's checks, so the stream was pushed to the ingester. */
    let reachedIngester = false;
    for (const entry of stream.entries) {
      // The BigInt timestamp is built only when a check reads it (the protobuf decoder makes it lazily).
      if (oldestNs !== undefined && entry.timestampNs < oldestNs) {
        refuse(400, tooOld(name, entry.timestampNs, oldestNs));
        continue;
      }
      if (newestNs !== undefined && entry.timestampNs > newestNs) {
        refuse(400, tooNew(name, entry.timestampNs));
        continue;
      }
      if (maxLineBytes > 0 && entry.lineBound * MAX_UTF8_PER_UNIT > maxLineBytes) {
        const lineBytes = utf8(entry.line);
        if (lineBytes > maxLineBytes) {
          refuse(400, lineTooLong(maxLineBytes, name, lineBytes));
          continue;
        }
      }
      const metaProblem = metadataProblem(entry, name, limits);
      if (metaProblem !== undefined) {
        refuse(400, metaProblem);
        continue;
      }
      if (poison && entry.line.includes(poison.marker)) {
        refuse(
          poison.status,
          `entry for stream '${name}' at ${entry.timestampNs} contains the poison marker ${JSON.stringify(poison.marker)}`,
        );
        continue;
      }
      reachedIngester = true;
      if (windowNs !== undefined) {
        const ts = entry.timestampNs;
        const newest = store.maxTimestamp(labels);
        if (newest !== undefined && ts < newest - windowNs) {
          result.rejected++;
          ignored.push({ ts, oldest: newest - windowNs });
          continue;
        }
      }
      store.add(labels, entry, key, limits.tenant);
      result.accepted++;
    }
    if (reachedIngester) {
      // Each stream's result replaces the one before, so a stream stored whole clears an earlier
      // stream's report: that refusal is then answered by nobody.
      ingesterReport =
        ignored.length === 0
          ? undefined
          : outOfOrderReport(
              limits.tenant,
              name,
              ignored,
              stream.entries.length,
              limits.maxIgnoredStreamErrors,
            );
    }
  }
  if (ingesterReport !== undefined) {
    // The ingester's error wins over the distributor's own refusals, which it then does not name.
    result.status = 400;
    result.body = ingesterReport;
    return result;
  }
  result.body = groupedErrors(errors);
  return result;
}
