// The lease object's JSON: `{holder, epoch, ttl_ms, renewed_at, acquired_at}`. The timestamps are for
// humans (`aws s3 cp ... -`); no replica ever compares them with its own clock.
import type { LeaseRecord } from "../lease/backend.ts";

interface LeaseObjectDocument {
  holder: string;
  epoch: number;
  ttl_ms: number;
  renewed_at?: string;
  acquired_at?: string;
}

export function encodeLease(record: LeaseRecord, defaultTtlMs: number): Uint8Array {
  const doc: LeaseObjectDocument = {
    holder: record.holder,
    epoch: record.epoch,
    ttl_ms: record.ttlMs ?? defaultTtlMs,
  };
  if (record.renewedAtMs !== undefined) doc.renewed_at = new Date(record.renewedAtMs).toISOString();
  if (record.acquiredAtMs !== undefined) doc.acquired_at = new Date(record.acquiredAtMs).toISOString();
  return Buffer.from(JSON.stringify(doc));
}

export type DecodedLease = { record: LeaseRecord } | { problem: string };

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Anything that is not a lease document yields `problem`: the coordinator claims it like an absent
 * lease. A document without `renewed_at` was never renewed and is claimable too (as a k8s Lease without
 * renewTime, #62); the epoch floors keep a rewritten epoch from going backwards (#99).
 */
export function decodeLease(bytes: Uint8Array): DecodedLease {
  let doc: unknown;
  try {
    doc = JSON.parse(utf8.decode(bytes));
  } catch {
    return { problem: "not valid UTF-8 JSON" };
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return { problem: "not a JSON object" };
  const d = doc as Record<string, unknown>;
  if (typeof d.holder !== "string") return { problem: "holder is not a string" };
  if (typeof d.epoch !== "number" || !Number.isSafeInteger(d.epoch) || d.epoch < 0) {
    return { problem: "epoch is not a non-negative integer" };
  }
  if (typeof d.ttl_ms !== "number" || !(d.ttl_ms > 0) || !Number.isFinite(d.ttl_ms)) {
    return { problem: "ttl_ms is not a positive number" };
  }
  return {
    record: {
      holder: d.holder,
      epoch: d.epoch,
      ttlMs: d.ttl_ms,
      renewedAtMs: timestamp(d.renewed_at),
      acquiredAtMs: timestamp(d.acquired_at),
    },
  };
}

function timestamp(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}
