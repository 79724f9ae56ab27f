// Reads the body of a Loki 400 into per-entry refusals. Loki stores every valid entry of a push and
// answers 400 for the rest, naming each refused entry in its own words:
//   - the distributor's validation errors (pkg/validation/validate.go), grouped by identical text
//     and joined with "; ", a group of n > 1 (or any group when there are several) prefixed
//     "<n> errors like: ". Timestamps there are RFC3339 to the second, streams in Prometheus form
//     `{a="b", c="d"}` (per entry) or as sent (per stream);
//   - an ingester's out-of-order report: one line per refused entry, capped at
//     `-ingester.max-ignored-stream-errors` (10 by default), then
//     `user '<tenant>', total ignored: <n> out of <m> for stream: {…}`.
// Anything else (a proxy's page, a future message) is kept as unparsed text: the caller must then
// treat the entries it cannot account for as unsettled.
import type { Labels } from "../../model.ts";

/** Low-cardinality drop reasons for what Loki (or the local check standing in for it) refuses. */
export type RefusalReason =
  | "too_old"
  | "too_far_in_future"
  | "line_too_long"
  | "metadata_too_large"
  | "metadata_disallowed"
  | "label_limits"
  | "too_far_behind";

/** Which entries of the named stream a message stands for. */
export type EntryMatch =
  /** Every entry of the stream (a label problem refuses the stream). */
  | { by: "stream" }
  /** Entries in this UTC second; Loki's threshold is monotone, so the `count` oldest/newest of them. */
  | { by: "second"; sec: bigint; pick: "oldest" | "newest" }
  | { by: "line_bytes"; bytes: number }
  | { by: "metadata_bytes"; bytes: number }
  | { by: "metadata_count"; count: number }
  | { by: "has_metadata" }
  /** The exact instant (the ingester prints nanoseconds). */
  | { by: "timestamp"; ns: bigint };

export interface LokiRefusal {
  readonly reason: RefusalReason;
  /** The stream as Loki printed it, parsed; undefined when only the raw text is usable. */
  readonly labels: Labels | undefined;
  /** The stream exactly as printed. */
  readonly rawLabels: string;
  readonly match: EntryMatch;
  /** How many entries this message stands for ("<n> errors like: …"). */
  readonly count: number;
  /** Loki's words, without the group prefix. */
  readonly detail: string;
}

/** An ingester report for one stream: which entries it listed and how many it refused in all. */
export interface StreamReport {
  readonly labels: Labels | undefined;
  readonly rawLabels: string;
  readonly listed: number;
  readonly total: number;
  /**
   * The UTC second of the stream's "oldest acceptable timestamp": whatever the list leaves out is
   * older, so entries from the next second on were stored.
   */
  readonly oldestSec: bigint | undefined;
}

export interface ParsedRefusals {
  readonly refusals: LokiRefusal[];
  /** Ingester reports: streams not named in one are unsettled (Loki reports only one of them). */
  readonly reports: StreamReport[];
  /** Text that matched no known message. */
  readonly unparsed: string[];
}

const GO_ESCAPES: Record<string, string> = {
  a: "\x07",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
  "\\": "\\",
  '"': '"',
  "'": "'",
};

/** A Go-quoted string starting at text[i] === '"'; [value, index after the closing quote]. */
function readQuoted(text: string, i: number): [string, number] | undefined {
  let out = "";
  let p = i + 1;
  while (p < text.length) {
    const c = text[p]!;
    if (c === '"') return [out, p + 1];
    if (c !== "\\") {
      out += c;
      p++;
      continue;
    }
    const e = text[p + 1];
    if (e === undefined) return undefined;
    const simple = GO_ESCAPES[e];
    if (simple !== undefined) {
      out += simple;
      p += 2;
      continue;
    }
    const width = e === "x" ? 2 : e === "u" ? 4 : e === "U" ? 8 : 0;
    const hex = text.slice(p + 2, p + 2 + width);
    if (width === 0 || hex.length !== width || !/^[0-9a-fA-F]+$/.test(hex)) return undefined;
    out += String.fromCodePoint(parseInt(hex, 16));
    p += 2 + width;
  }
  return undefined;
}

/** `{a="b", c="d"}` (either separator) at text[i]; [labels, index after `}`]. */
export function readSelector(text: string, i: number): [Labels, number] | undefined {
  if (text[i] !== "{") return undefined;
  const labels: Labels = {};
  let p = i + 1;
  for (;;) {
    while (text[p] === " ") p++;
    if (text[p] === "}") return [labels, p + 1];
    const name = /[A-Za-z_][A-Za-z0-9_]*/y;
    name.lastIndex = p;
    const m = name.exec(text);
    if (!m || text[p + m[0].length] !== "=") return undefined;
    p += m[0].length + 1;
    const quoted = readQuoted(text, p);
    if (!quoted || text[p] !== '"') return undefined;
    labels[m[0]] = quoted[0];
    p = quoted[1];
    if (text[p] === ",") p++;
    else if (text[p] !== "}") return undefined;
  }
}

/** RFC3339 (any offset) → its UTC second. */
function rfc3339Second(text: string): bigint | undefined {
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? BigInt(Math.floor(ms / 1000)) : undefined;
}

const GO_TIME =
  /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))? ([+-])(\d{2})(\d{2})(?: [A-Za-z0-9+-]+)?$/;

/** Go's time.String(), `2026-01-01 00:00:00.000123 +0000 UTC` → nanoseconds. */
export function goTimeNs(text: string): bigint | undefined {
  const m = GO_TIME.exec(text.trim());
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}T${m[2]}${m[4]}${m[5]}:${m[6]}`);
  if (!Number.isFinite(ms)) return undefined;
  return BigInt(ms) * 1_000_000n + BigInt((m[3] ?? "").padEnd(9, "0"));
}

interface Head {
  /** Literal text before the stream. */
  readonly before: RegExp;
  /** What follows the stream's closing quote; groups feed `build`. */
  readonly after: RegExp;
  readonly build: (
    groups: string[],
    rawLabels: string,
  ) => Omit<LokiRefusal, "labels" | "rawLabels" | "count" | "detail"> | undefined;
}

const SEE = String.raw`\. Please see \x60limits_config\.[a-z_]+\x60 or contact your Loki administrator to (?:increase|enable) it\.`;

/** Loki's per-entry and per-stream validation messages, as heads around a quoted stream. */
const HEADS: readonly Head[] = [
  {
    before: /entry for stream '/y,
    after: /' has timestamp too old: ([0-9T:.+Z-]+), oldest acceptable timestamp is: ([0-9T:.+Z-]+)/y,
    build: ([ts]) => {
      const sec = rfc3339Second(ts!);
      return sec === undefined
        ? undefined
        : { reason: "too_old", match: { by: "second", sec, pick: "oldest" } };
    },
  },
  {
    before: /entry for stream '/y,
    after: /' has timestamp too new: ([0-9T:.+Z-]+)/y,
    build: ([ts]) => {
      const sec = rfc3339Second(ts!);
      return sec === undefined
        ? undefined
        : { reason: "too_far_in_future", match: { by: "second", sec, pick: "newest" } };
    },
  },
  {
    before: /entry for stream '/y,
    after: /' has \d+ label names; limit \d+/y,
    build: () => ({ reason: "label_limits", match: { by: "stream" } }),
  },
  {
    before: /Max entry size '\d+' bytes exceeded for stream '/y,
    after: /' while adding an entry with length '(\d+)' bytes/y,
    build: ([n]) => ({ reason: "line_too_long", match: { by: "line_bytes", bytes: Number(n) } }),
  },
  {
    before: /stream '/y,
    after: new RegExp(
      String.raw`' has structured metadata too large: '(\d+)' bytes, limit: '\d+' bytes${SEE}`,
      "y",
    ),
    build: ([n]) => ({ reason: "metadata_too_large", match: { by: "metadata_bytes", bytes: Number(n) } }),
  },
  {
    before: /stream '/y,
    after: new RegExp(
      String.raw`' has too many structured metadata labels: '(\d+)', limit: '\d+'${SEE}`,
      "y",
    ),
    build: ([n]) => ({ reason: "metadata_too_large", match: { by: "metadata_count", count: Number(n) } }),
  },
  {
    before: /stream '/y,
    after: new RegExp(String.raw`' includes structured metadata, but this feature is disallowed${SEE}`, "y"),
    build: () => ({ reason: "metadata_disallowed", match: { by: "has_metadata" } }),
  },
  {
    before: /stream '/y,
    after: /' has (?:label name too long|label value too long|duplicate label name): '.*?'(?=; |\n|$)/y,
    build: () => ({ reason: "label_limits", match: { by: "stream" } }),
  },
];

const GROUP = /(\d+) errors like: /y;
/** gRPC status text an httpgrpc error may carry in front of the message. */
const RPC_PREFIX = /rpc error: code = \w+(?:\(\d+\))? desc = /y;
const SEPARATOR = /(?:; |\s)+/y;
const PARSE_LABELS = /Error parsing labels '(.*?)' with error: .*?(?=; |\n|$)/y;
const INGESTER_LINE = /entry with timestamp (.+?) ignored, reason: '(.*?)',(?:\n|\s)/y;
const INGESTER_TAIL = /user '.*?', total ignored: (\d+) out of \d+ for stream: /y;

function at(re: RegExp, text: string, p: number): RegExpExecArray | null {
  re.lastIndex = p;
  return re.exec(text);
}

/** One validation message at p: the refusal (without count) and where it ends. */
function readMessage(text: string, p: number): [Omit<LokiRefusal, "count">, number] | undefined {
  for (const head of HEADS) {
    const before = at(head.before, text, p);
    if (!before) continue;
    const start = p + before[0].length;
    const selector = readSelector(text, start);
    if (!selector) continue;
    const after = at(head.after, text, selector[1]);
    if (!after) continue;
    const built = head.build(after.slice(1), text.slice(start, selector[1]));
    if (!built) continue;
    const end = selector[1] + after[0].length;
    return [
      {
        ...built,
        labels: selector[0],
        rawLabels: text.slice(start, selector[1]),
        detail: text.slice(p, end),
      },
      end,
    ];
  }
  const raw = at(PARSE_LABELS, text, p);
  if (raw) {
    const end = p + raw[0].length;
    const rawLabels = raw[1]!;
    return [
      {
        reason: "label_limits",
        match: { by: "stream" },
        labels: undefined,
        rawLabels,
        detail: text.slice(p, end),
      },
      end,
    ];
  }
  return undefined;
}

/** An ingester out-of-order report at p: its refusals, its stream report, where it ends. */
function readIngesterReport(text: string, p: number): [LokiRefusal[], StreamReport, number] | undefined {
  const listed: { ns: bigint; detail: string }[] = [];
  let oldestSec: bigint | undefined;
  let q = p;
  for (;;) {
    const line = at(INGESTER_LINE, text, q);
    if (!line) break;
    const ns = goTimeNs(line[1]!);
    if (ns === undefined) return undefined;
    listed.push({ ns, detail: line[0].trim() });
    const oldest = /oldest acceptable timestamp is: ([0-9T:.+Z-]+)/.exec(line[2]!);
    const sec = oldest ? rfc3339Second(oldest[1]!) : undefined;
    if (sec !== undefined && (oldestSec === undefined || sec > oldestSec)) oldestSec = sec;
    q += line[0].length;
  }
  const tail = at(INGESTER_TAIL, text, q);
  if (!tail) return undefined;
  const start = q + tail[0].length;
  const selector = readSelector(text, start);
  if (!selector) return undefined;
  const rawLabels = text.slice(start, selector[1]);
  const summary = text.slice(q, selector[1]);
  const refusals = listed.map(({ ns, detail }): LokiRefusal => ({
    reason: "too_far_behind",
    labels: selector[0],
    rawLabels,
    match: { by: "timestamp", ns },
    count: 1,
    detail: `${detail} ${summary}`,
  }));
  const report = { labels: selector[0], rawLabels, listed: listed.length, total: Number(tail[1]), oldestSec };
  return [refusals, report, selector[1]];
}

/** Parses a 400 body; never throws. */
export function parseRefusals(body: string): ParsedRefusals {
  const text = body.trim();
  const out: ParsedRefusals = { refusals: [], reports: [], unparsed: [] };
  let p = 0;
  while (p < text.length) {
    const sep = at(SEPARATOR, text, p);
    if (sep) {
      p += sep[0].length;
      continue;
    }
    const report = readIngesterReport(text, p);
    if (report) {
      out.refusals.push(...report[0]);
      out.reports.push(report[1]);
      p = report[2];
      continue;
    }
    const group = at(GROUP, text, p);
    let q = group ? p + group[0].length : p;
    const rpc = at(RPC_PREFIX, text, q);
    if (rpc) q += rpc[0].length;
    const message = readMessage(text, q);
    if (message) {
      out.refusals.push({ ...message[0], count: group ? Number(group[1]) : 1 });
      p = message[1];
      continue;
    }
    // Unknown text: skip to the next message boundary.
    const ends = [text.indexOf("; ", p), text.indexOf("\n", p)].filter((i) => i >= 0);
    const end = ends.length > 0 ? Math.min(...ends) : text.length;
    out.unparsed.push(text.slice(p, end));
    p = end;
  }
  return out;
}
