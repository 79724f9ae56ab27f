// The watermark-and-Id-window cursor of eventlog_objects and ApexLog (spec A §6.2, §8):
// `{"ids": [...], "last_ts": "<as Salesforce sent it>"}`, keys sorted, Python spacing, so the Python
// sf2loki and this one read each other's checkpoints.
//
// Only Ids *at* the watermark are carried: every query is bounded below by the watermark (`>=`, or
// `>` with an Id tiebreak), so an older Id can never come back and remembering it buys nothing, while
// a 500-Id window costs ~10 KB on every entry's checkpoint. `ids` holds the newest 500 of them (the
// Python reader's window); when more share the watermark, `boundary_ids` holds them all (fix #127),
// since the next `>=` query returns every one of them again.
import type { Logger } from "../../obs/logger.ts";
import type { CheckpointToken } from "../../model.ts";
import { formatIsoSeconds, isValidTimestamp, parseSfTimestampNs } from "../../salesforce/soql-datetime.ts";
import { isSalesforceId } from "../../salesforce/soql-literals.ts";
import { LazyToken } from "../shaping/cycle.ts";
import { canonicalJson } from "../shaping/json.ts";

/** The size of `ids`, the window the Python sf2loki reads. */
export const ID_WINDOW = 500;
const BOUNDARY_WARN = 5_000;

interface Stored {
  lastTs: unknown;
  ids: unknown[];
  boundary: unknown[] | undefined;
}

function decode(value: string): Stored {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return { lastTs: value, ids: [], boundary: undefined }; // legacy bare timestamp
  }
  if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
    const o = parsed as Record<string, unknown>;
    return {
      lastTs: o.last_ts,
      ids: Array.isArray(o.ids) ? (o.ids as unknown[]) : [],
      boundary: Array.isArray(o.boundary_ids) ? (o.boundary_ids as unknown[]) : undefined,
    };
  }
  return { lastTs: typeof parsed === "string" ? parsed : String(parsed), ids: [], boundary: undefined };
}

export class IdWindowCursor {
  readonly key: string;
  #lastTs: string;
  #wmNs: bigint;
  /** Every carried Id, oldest first; append-only until `compact`, so snapshots are index pairs. */
  #log: string[];
  /** Where the Ids at the watermark start in `#log`. */
  #boundaryStart: number;
  #known: Set<string>;

  private constructor(key: string, lastTs: string, log: string[], boundaryStart: number) {
    this.key = key;
    this.#lastTs = lastTs;
    this.#wmNs = parseSfTimestampNs(lastTs) ?? 0n;
    this.#log = log;
    this.#boundaryStart = boundaryStart;
    this.#known = new Set(log);
  }

  /**
   * Tolerant read (spec A §5.5, §6.2): JSON object, legacy bare timestamp or any JSON scalar; a
   * watermark that does not parse falls back to now - lookback with a warning; Ids that are not
   * Salesforce Ids are dropped with a warning (#150).
   */
  static load(
    key: string,
    value: string | undefined,
    opts: { nowMs: number; lookbackMs: number; log: Logger },
  ): IdWindowCursor {
    const fallback = formatIsoSeconds(opts.nowMs - opts.lookbackMs);
    if (value === undefined) return new IdWindowCursor(key, fallback, [], 0);
    const stored = decode(value);
    let lastTs = stored.lastTs;
    if (!isValidTimestamp(lastTs)) {
      opts.log.warn(
        { key, stored: value.slice(0, 120), fallback },
        "stored watermark is not a timestamp; falling back to the lookback window",
      );
      lastTs = fallback;
    }
    const valid = (ids: unknown[]): string[] => {
      const ok = ids.filter(isSalesforceId);
      if (ok.length !== ids.length) {
        opts.log.warn(
          { key, dropped: ids.length - ok.length },
          "ignoring stored Ids that are not Salesforce Ids",
        );
      }
      return ok;
    };
    const boundary = stored.boundary === undefined ? undefined : valid(stored.boundary);
    const inBoundary = new Set(boundary);
    const ids = valid(stored.ids)
      .filter((id) => !inBoundary.has(id))
      .slice(-ID_WINDOW);
    // Without boundary_ids we cannot tell which Ids sit at the watermark: keep them all as if they did.
    const log = [...ids, ...(boundary ?? [])];
    return new IdWindowCursor(
      key,
      lastTs as string,
      [...new Set(log)],
      boundary === undefined ? 0 : ids.length,
    );
  }

  get watermark(): string {
    return this.#lastTs;
  }

  get watermarkNs(): bigint {
    return this.#wmNs;
  }

  /** The newest Id at the watermark: the ascending cursor's tiebreak. */
  get lastId(): string | undefined {
    return this.#boundaryStart < this.#log.length ? this.#log.at(-1) : undefined;
  }

  has(id: unknown): boolean {
    return typeof id === "string" && this.#known.has(id);
  }

  /** A record was consumed: a valid, not older timestamp moves the watermark; its Id joins the window. */
  advance(ts: unknown, id: unknown): void {
    const ns = typeof ts === "string" ? parseSfTimestampNs(ts) : undefined;
    if (ns !== undefined && ns > this.#wmNs) {
      this.#lastTs = ts as string;
      this.#wmNs = ns;
      this.#boundaryStart = this.#log.length;
    }
    if (typeof id === "string" && id !== "" && !this.#known.has(id)) {
      this.#log.push(id);
      this.#known.add(id);
    }
  }

  /** More than 5 000 Ids share the watermark (reported once by the source). */
  get boundaryIsLarge(): boolean {
    return this.#log.length - this.#boundaryStart > BOUNDARY_WARN;
  }

  /** The cursor as it is now, serialised only if and when the pipeline reads it. */
  token(): CheckpointToken {
    const log = this.#log;
    const end = log.length;
    const boundaryStart = this.#boundaryStart;
    const lastTs = this.#lastTs;
    return new LazyToken(this.key, () => render(log, end, boundaryStart, lastTs));
  }

  serialise(): string {
    return render(this.#log, this.#log.length, this.#boundaryStart, this.#lastTs);
  }

  /** Drops the Ids below the watermark: no query can return them again. */
  compact(): void {
    const from = this.#boundaryStart;
    if (from === 0) return;
    this.#log = this.#log.slice(from);
    this.#boundaryStart -= from;
    this.#known = new Set(this.#log);
  }
}

function render(log: readonly string[], end: number, boundaryStart: number, lastTs: string): string {
  const from = Math.max(boundaryStart, end - ID_WINDOW);
  const value: Record<string, unknown> = { ids: log.slice(from, end), last_ts: lastTs };
  if (boundaryStart < from) value.boundary_ids = log.slice(boundaryStart, end);
  return canonicalJson(value);
}
