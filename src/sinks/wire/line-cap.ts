// Per-line byte cap (spec B §4.5): one fat row must not make the receiver refuse a whole batch.
import type { LogEntry } from "../../model.ts";

/** `…[truncated, original <N> bytes]`, U+2026 ellipsis, N = the original UTF-8 length. */
export function truncationMarker(originalBytes: number): string {
  return `…[truncated, original ${originalBytes} bytes]`;
}

/** Largest cut ≤ limit that does not land inside a multi-byte UTF-8 character. */
function charBoundary(utf8: Buffer, limit: number): number {
  let cut = Math.min(limit, utf8.length);
  while (cut > 0 && cut < utf8.length && (utf8[cut]! & 0xc0) === 0x80) cut--;
  return cut;
}

/**
 * The line cut to at most `maxBytes` UTF-8 bytes: the longest whole-character prefix plus the
 * marker (marker bytes included in the cap), or a bare hard cut when the marker alone does not fit.
 */
export function truncateLine(line: string, lineBytes: number, maxBytes: number): string {
  const marker = truncationMarker(lineBytes);
  const markerBytes = Buffer.byteLength(marker, "utf8");
  // Every UTF-16 unit is at least one UTF-8 byte, so the first maxBytes units hold the whole prefix.
  const utf8 = Buffer.from(line.length > maxBytes ? line.slice(0, maxBytes) : line, "utf8");
  if (maxBytes < markerBytes) return utf8.toString("utf8", 0, charBoundary(utf8, maxBytes));
  return utf8.toString("utf8", 0, charBoundary(utf8, maxBytes - markerBytes)) + marker;
}

/**
 * Caps every entry in place (so a retried batch stays capped) and reports each truncated one.
 * Idempotent: a capped line fits, and fitting lines take the memoised-length fast path.
 */
export function capLines(
  entries: readonly LogEntry[],
  maxBytes: number,
  onTruncated: (entry: LogEntry) => void,
): void {
  if (maxBytes <= 0) return;
  for (const entry of entries) {
    if (entry.lineBytes <= maxBytes) continue;
    entry.line = truncateLine(entry.line, entry.lineBytes, maxBytes);
    onTruncated(entry);
  }
}
