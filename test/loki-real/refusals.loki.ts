// Loki's own refusals, per tenant override, against the real Loki 3.4.6 (#26 case 2): with local
// validation off the sink reads Loki's real 400 bodies per entry; with it on (the same limits copied
// into sink.loki.limits) nothing refused is sent at all. Either way every valid entry is stored once
// (by count), every refused one is a dead letter under its reason with the words that refused it, and a
// batch costs at most two pushes (no bisection storm).
import assert from "node:assert/strict";
import { test } from "node:test";
import { LogEntry, type Labels } from "../../src/model.ts";
import type { DeadLetterGroup } from "../../src/pipeline/dead-letters.ts";
import { Pipeline } from "../../src/pipeline/pipeline.ts";
import { DEFAULT_BATCH_SETTINGS } from "../../src/pipeline/settings.ts";
import { LOKI_DEFAULT_LIMITS, type LokiLimits } from "../../src/sinks/receiving-loki/limits.ts";
import { createLokiSink } from "../../src/sinks/loki/sink.ts";
import { MemoryStore, ScriptedSource } from "../support/fakes.ts";
import { faultProxy } from "./support/fault-proxy.ts";
import { nowNs, protobufSinkSettings, realLokiForFile, type TenantLimits } from "./support/real-loki.ts";

const shared = realLokiForFile();
const VALID = 80;
const REFUSED = 20;
const MIN_NS = 60_000_000_000n;

interface KindEntry {
  ts: bigint;
  line: string;
  labels: Labels;
  meta: Labels;
}

interface Kind {
  name: string;
  /** The tenant's override in Loki's limits_config words. */
  loki: TenantLimits;
  /** The same limit in sink.loki.limits. */
  local: Partial<LokiLimits>;
  reason: string;
  /** Loki's words for it, as its 400 says them. */
  lokiWords: RegExp;
  /** Entry i of the case; refused ones are the last REFUSED. */
  entry: (
    i: number,
    refused: boolean,
    base: Labels,
  ) => { ts: bigint; line: string; labels: Labels; meta: Labels };
}

const line = (i: number): string => `{"EventIdentifier":"refusal-${i}"}`;
const nowish = (i: number): bigint => nowNs() - 10n * MIN_NS + BigInt(i) * 1_000_000n;

const KINDS: Kind[] = [
  {
    name: "too-old",
    loki: { reject_old_samples: true, reject_old_samples_max_age: "1h" },
    local: { reject_old_samples: true, reject_old_samples_max_age: 3_600_000 },
    reason: "too_old",
    lokiWords: /has timestamp too old/,
    entry: (i, refused, base) => ({
      ts: refused ? nowNs() - 120n * MIN_NS + BigInt(i) * 1_000_000n : nowish(i),
      line: line(i),
      labels: base,
      meta: {},
    }),
  },
  {
    name: "too-new",
    loki: { creation_grace_period: "10m" },
    local: { creation_grace_period: 600_000 },
    reason: "too_far_in_future",
    lokiWords: /has timestamp too new/,
    entry: (i, refused, base) => ({
      ts: refused ? nowNs() + 60n * MIN_NS + BigInt(i) * 1_000_000n : nowish(i),
      line: line(i),
      labels: base,
      meta: {},
    }),
  },
  {
    name: "line-too-long",
    loki: { max_line_size: 1000, max_line_size_truncate: false },
    local: { max_line_size: 1000, max_line_size_truncate: false },
    reason: "line_too_long",
    lokiWords: /Max entry size '1000' bytes exceeded/,
    entry: (i, refused, base) => ({
      ts: nowish(i),
      line: refused ? `{"EventIdentifier":"refusal-${i}","pad":"${"x".repeat(2000)}"}` : line(i),
      labels: base,
      meta: {},
    }),
  },
  {
    name: "metadata-entries",
    loki: { max_structured_metadata_entries_count: 2 },
    local: { max_structured_metadata_entries_count: 2 },
    reason: "metadata_too_large",
    lokiWords: /too many structured metadata labels: '3', limit: '2'/,
    entry: (i, refused, base): KindEntry => ({
      ts: nowish(i),
      line: line(i),
      labels: base,
      meta: refused ? { user_id: `005${i}`, session: `s${i}`, ip: "10.0.0.1" } : { user_id: `005${i}` },
    }),
  },
  {
    name: "label-names",
    loki: { max_label_names_per_series: 4 },
    local: { max_label_names_per_series: 4 },
    reason: "label_limits",
    lokiWords: /has 5 label names; limit 4/,
    entry: (i, refused, base) => ({
      ts: nowish(i),
      line: line(i),
      labels: refused ? { ...base, extra: "one-too-many" } : base,
      meta: {},
    }),
  },
];

const tenantOf = (kind: Kind, local: boolean): string => `${kind.name}-${local ? "local" : "loki"}`;

test(
  "Loki's refusals per tenant override: valid entries stored once, refused ones dead-lettered in Loki's words",
  { skip: shared.missing },
  async (t) => {
    const loki = shared.loki;
    const overrides: Record<string, TenantLimits> = {};
    for (const kind of KINDS) for (const local of [false, true]) overrides[tenantOf(kind, local)] = kind.loki;
    await loki.setLimits(overrides);
    const figures: Record<string, unknown> = {};
    for (const kind of KINDS) {
      for (const local of [false, true]) {
        const tenant = tenantOf(kind, local);
        const base: Labels = {
          job: "sf2loki",
          source: "eventlogfile",
          event_type: "Refusal",
          case: kind.name,
        };
        const key = `eventlogfile:${tenant}`;
        const entries = Array.from({ length: VALID + REFUSED }, (_, i) => {
          const e = kind.entry(i, i >= VALID, base);
          return new LogEntry({
            timestampNs: e.ts,
            labels: e.labels,
            line: e.line,
            structuredMetadata: e.meta,
            checkpoint: { key, value: String(i + 1) },
          });
        });
        const proxy = await faultProxy(t, loki.url);
        const sink = createLokiSink(
          protobufSinkSettings(`${proxy.url}/loki/api/v1/push`, tenant, {
            limits: local
              ? { ...LOKI_DEFAULT_LIMITS, ...kind.local }
              : { ...LOKI_DEFAULT_LIMITS, enabled: false },
          }),
        );
        t.after(() => sink.close());
        const kept: DeadLetterGroup[] = [];
        const store = new MemoryStore();
        await new Pipeline({
          sources: [new ScriptedSource("eventlogfile", entries)],
          sink,
          store,
          deadLetters: {
            keep: (group) => {
              kept.push(group);
              return Promise.resolve();
            },
          },
          batch: { ...DEFAULT_BATCH_SETTINGS, max_entries: VALID + REFUSED, flush_interval_ms: 50 },
        }).run(new AbortController().signal);

        const what = `${tenant}:`;
        const stored = await loki
          .reader(tenant)
          .count(`{case="${kind.name}"}`, nowNs() - 60n * MIN_NS, nowNs() + MIN_NS);
        assert.equal(stored, VALID, `${what} every valid entry stored once`);
        const refused = kept.flatMap((g) =>
          g.entries.map((e) => ({ reason: g.reason, detail: g.detail, line: e.line })),
        );
        assert.equal(
          refused.length,
          REFUSED,
          `${what} every refused entry is a dead letter: ${JSON.stringify(kept.map((g) => [g.reason, g.entries.length, g.detail.slice(0, 200)]))}`,
        );
        assert.ok(
          refused.every((r) => r.reason === kind.reason),
          `${what} reasons ${[...new Set(refused.map((r) => r.reason))].join(",")}`,
        );
        if (!local) {
          assert.ok(
            refused.every((r) => kind.lokiWords.test(r.detail)),
            `${what} Loki's words: ${refused[0]?.detail}`,
          );
          assert.ok(proxy.pushes <= 2, `${what} ${proxy.pushes} pushes for one batch`);
        } else {
          assert.equal(proxy.pushes, 1, `${what} only the valid entries were sent`);
        }
        assert.equal(
          store.doc.get(key),
          String(VALID + REFUSED),
          `${what} the checkpoint moved past the dead letters`,
        );
        figures[tenant] = { pushes: proxy.pushes, detail: refused[0]?.detail.slice(0, 160) };
      }
    }
    t.diagnostic(`refusals: ${JSON.stringify(figures)}`);
  },
);

test(
  "an out-of-order stream before a stored one: Loki answers the pair 204, so each stream goes alone and is named",
  { skip: shared.missing },
  async (t) => {
    const loki = shared.loki;
    const tenant = "last-stream";
    const stream = (event_type: string): Labels => ({ job: "sf2loki", source: "eventlogfile", event_type });
    const behind = stream("Behind");
    const fresh = stream("Fresh");
    const now = nowNs();
    const hourNs = 60n * MIN_NS;
    const push = (body: unknown): Promise<Response> =>
      fetch(loki.pushUrl, {
        method: "POST",
        headers: { "content-type": "application/json", "x-scope-orgid": tenant },
        body: JSON.stringify(body),
      });
    // What the sink works around, measured: the refusal of the first stream goes unanswered.
    const first = await push({ streams: [{ stream: behind, values: [[String(now), "newest"]] }] });
    assert.equal(first.status, 204);
    const pair = await push({
      streams: [
        { stream: behind, values: [[String(now - 2n * hourNs), "two hours behind"]] },
        { stream: fresh, values: [[String(now), "fresh, raw"]] },
      ],
    });
    assert.equal(pair.status, 204, "Loki 3.4.6 answers for the request's last stream only");

    const sink = createLokiSink(
      protobufSinkSettings(loki.pushUrl, tenant, { limits: { ...LOKI_DEFAULT_LIMITS, enabled: false } }),
    );
    t.after(() => sink.close());
    const mk = (labels: Labels, ts: bigint, i: number): LogEntry =>
      new LogEntry({
        timestampNs: ts,
        labels,
        line: `entry-${i}`,
        checkpoint: { key: "k", value: String(i) },
      });
    const late = Array.from({ length: 5 }, (_, i) => mk(behind, now - 2n * hourNs + BigInt(i), i));
    const stored = Array.from({ length: 5 }, (_, i) => mk(fresh, now - MIN_NS + BigInt(i), 10 + i));
    const landed: LogEntry[] = [];
    const result = await sink.push([...late, ...stored], undefined, undefined, (l) => landed.push(...l));
    assert.deepEqual(
      new Set(result.dropped.flatMap((g) => g.entries)),
      new Set(late),
      "the late stream is named in Loki's own report",
    );
    assert.ok(result.dropped.every((g) => g.reason === "too_far_behind"));
    assert.match(result.dropped[0]!.detail!, /entry too far behind/);
    assert.deepEqual(new Set(landed), new Set(stored));
    const reader = loki.reader(tenant);
    const range = [now - 3n * hourNs, now + MIN_NS] as const;
    assert.equal(await reader.count(`{event_type="Fresh"} |~ "entry-"`, ...range), 5);
    assert.equal(await reader.count(`{event_type="Behind"}`, ...range), 1, "only the newest");
  },
);
