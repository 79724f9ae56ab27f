// The lease file's JSON. A superset of the Python sf2loki's `{holder, expires_at, epoch}`: the extra
// fields (ttl_ms, renewed_at, acquired_at) are what the observed-time staleness rule and humans need.
import type { LeaseRecord } from "../lease/backend.ts";

export interface LeaseDocument {
  holder: string;
  /** renewed_at + ttl, or renewed_at itself once released; kept so older readers still see expiry. */
  expires_at: string;
  epoch: number;
  ttl_ms: number;
  renewed_at: string;
  acquired_at?: string;
}

export function serializeLease(record: LeaseRecord, defaultTtlMs: number): string {
  const ttlMs = record.ttlMs ?? defaultTtlMs;
  const renewed = record.renewedAtMs ?? 0;
  const doc: LeaseDocument = {
    holder: record.holder,
    expires_at: new Date(record.holder === "" ? renewed : renewed + ttlMs).toISOString(),
    epoch: record.epoch,
    ttl_ms: ttlMs,
    renewed_at: new Date(renewed).toISOString(),
  };
  if (record.acquiredAtMs !== undefined) doc.acquired_at = new Date(record.acquiredAtMs).toISOString();
  return JSON.stringify(doc);
}

export type ParsedLease = { record: LeaseRecord } | { problem: string };

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Parses the lease bytes. Anything that is not a lease document yields `problem` (claimable like an
 * absent lease, spec §2.3). A missing or non-integer epoch reads as 0; the coordinator's epoch floors
 * keep that from restarting the fence (#99).
 */
export function parseLease(bytes: Uint8Array, defaultTtlMs: number): ParsedLease {
  let doc: unknown;
  try {
    doc = JSON.parse(utf8.decode(bytes));
  } catch {
    return { problem: "not valid UTF-8 JSON" };
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    return {
      problem: `a JSON ${Array.isArray(doc) ? "array" : doc === null ? "null" : typeof doc}, not an object`,
    };
  }
  const d = doc as Record<string, unknown>;
  if (typeof d.holder !== "string") return { problem: "holder is not a string" };
  const expires = timestamp(d.expires_at);
  if (expires === undefined) return { problem: "expires_at is not a timestamp" };
  const ttlMs = typeof d.ttl_ms === "number" && d.ttl_ms > 0 ? d.ttl_ms : defaultTtlMs;
  const epoch = typeof d.epoch === "number" && Number.isSafeInteger(d.epoch) && d.epoch >= 0 ? d.epoch : 0;
  return {
    record: {
      holder: d.holder,
      epoch,
      ttlMs,
      renewedAtMs: timestamp(d.renewed_at) ?? expires - ttlMs,
      acquiredAtMs: timestamp(d.acquired_at),
    },
  };
}

/** ISO-8601; a naive timestamp (no offset) is UTC, as the Python implementation wrote and read it. */
function timestamp(value: unknown): number | undefined {
  if (typeof value !== "string" || value === "") return undefined;
  const naive = /^\d{4}-\d{2}-\d{2}T[\d:.]+$/.test(value);
  const ms = Date.parse(naive ? `${value}Z` : value);
  return Number.isNaN(ms) ? undefined : ms;
}
