// `sink.loki:` — where the lines go and how they are batched (spec B §2, §4, §5.7, §9).
import { z } from "zod";
import { uncommittedProblem } from "../pipeline/settings.ts";
import { parseDuration } from "./duration.ts";
import {
  bool,
  duration,
  float,
  int,
  meta,
  oneOf,
  optNumber,
  optOneOf,
  optStr,
  secret,
  secretFile,
  section,
  str,
  strList,
  strMap,
} from "./fields.ts";
import { tlsSection } from "./schema-tls.ts";

const batch = section(
  z
    .strictObject({
      max_entries: int(1000, "Flush when a batch holds this many entries.", { min: 1 }),
      max_bytes: int(1_048_576, "Flush when a batch reaches this many bytes (line bytes + 64 per entry).", {
        min: 1,
      }),
      flush_interval: duration("1s", "Flush this long after a batch's first entry."),
      max_line_bytes: int(262_144, "Longer lines are truncated with a marker; 0 disables.", { min: 0 }),
      queue_maxsize: int(10_000, "Entries queued per lane before sources wait.", { min: 100 }),
      queue_max_bytes: int(268_435_456, "Bytes queued per lane before sources wait; 0 disables.", { min: 0 }),
      max_in_flight: int(
        4,
        "HTTP requests open at once per lane at the destination (Loki push or OTLP), however batches are cut into requests; commits still apply in batch order. 1 = one request at a time.",
        {
          min: 1,
          max: 64,
        },
      ),
      max_uncommitted: int(
        16,
        "Batches per lane pushed and not yet committed: the pushes in flight plus delivered ones waiting " +
          "for their checkpoint write (they hold only checkpoints), so a slow store does not slow the " +
          "pushes. Bounds what a crash re-delivers (x max_entries). At least max_in_flight.",
        { min: 1, max: 1024 },
      ),
    })
    .superRefine((b, ctx) => {
      const problem = uncommittedProblem(b);
      if (problem !== undefined)
        ctx.addIssue({ code: "custom", path: ["max_uncommitted"], message: problem });
    }),
  "Batching and the per-lane queue bounds (memory ≈ 2 lanes × queue_max_bytes).",
);

const egress = section(
  z.strictObject({
    max_lines_per_second: float(0, "Rate cap on lines pushed; 0 = off.", { min: 0 }),
    max_bytes_per_second: float(0, "Rate cap on line bytes pushed; 0 = off.", { min: 0 }),
    daily_byte_budget: int(0, "Line bytes per UTC day (persisted under `egress:budget`); 0 = off.", {
      min: 0,
    }),
    budget_action: oneOf(["pause", "drop"], "pause", "What happens when the daily budget is spent."),
  }),
  "Egress governor, one per Loki destination: rate caps delay pushes (the streaming lane first), the daily budget pauses or drops (docs/egress.md).",
);

// Loki's own `limits_config` names and defaults (pkg/validation/limits.go); sizes in bytes.
const limits = section(
  z.strictObject({
    enabled: bool(
      true,
      "Check entries against these limits before pushing; what would be refused is dropped at once (with its reason) instead of sent.",
    ),
    reject_old_samples: bool(true, "Loki refuses entries older than reject_old_samples_max_age."),
    reject_old_samples_max_age: duration("168h", "Loki's maximum entry age (default 1 week)."),
    creation_grace_period: duration("10m", "How far into the future Loki accepts an entry's timestamp."),
    max_line_size: int(
      262_144,
      "Loki's maximum line size in bytes (256KB); 0 = none. Checked after batch.max_line_bytes truncation, so it bites only when that cap is 0 or larger.",
      { min: 0 },
    ),
    max_line_size_truncate: bool(
      false,
      "Loki truncates long lines instead of refusing them (then max_line_size refuses nothing).",
    ),
    max_structured_metadata_size: int(
      65_536,
      "Loki's structured metadata bytes per entry (64KB, names + values); 0 = none.",
      {
        min: 0,
      },
    ),
    max_structured_metadata_entries_count: int(
      128,
      "Loki's structured metadata fields per entry; 0 = none.",
      {
        min: 0,
      },
    ),
    max_label_names_per_series: int(15, "Loki's label names per stream (service_name not counted).", {
      min: 1,
    }),
    max_label_name_length: int(1024, "Loki's label name length in bytes.", { min: 1 }),
    max_label_value_length: int(2048, "Loki's label value length in bytes.", { min: 1 }),
    max_chunk_age: duration(
      "2h",
      "Loki's ingester max_chunk_age: a stream takes an entry at most half of it behind its newest one (`entry too far behind`), so sf2loki never has a stream's later entries land further ahead of its earlier ones in flight; 0 = no such limit.",
    ),
    per_stream_rate_limit: int(
      3_145_728,
      "Loki's per-stream rate in bytes a second (3MB). Streams well inside it (and inside the burst) that Loki accepted moments ago share one push request; any other stream goes alone, so no refusal of it is hidden by another stream's answer (docs/egress.md). 0 = every stream alone.",
      { min: 0 },
    ),
    per_stream_rate_limit_burst: int(15_728_640, "Loki's per-stream burst in bytes (15MB).", { min: 0 }),
  }),
  "The receiving Loki's limits_config: copy its values here (docs/egress.md, Loki's limits).",
);

const reconcile = section(
  z.strictObject({
    enabled: bool(
      true,
      "After a restart, takeover or shard move, look up in Loki what the previous run may already have pushed and push only what is missing, so no LogQL metric query counts an event twice; if the read path does not answer, push anyway (at-least-once) and say so.",
    ),
    query_url: optStr(
      "Base URL of Loki's query API (…/loki/api/v1/query_range is appended). Unset: the push URL less /loki/api/v1/push.",
      ["https://logs-prod-us-central1.grafana.net"],
    ),
    max_queries: int(
      2000,
      "Lookups one resume may make per destination; past it the rest is pushed unchecked (at-least-once).",
      { min: 1 },
    ),
    max_duration: duration(
      "10m",
      "Time one resume may spend waiting on lookups per destination; past it the rest is pushed unchecked.",
    ),
    clock_skew: duration(
      "5m",
      "How far Salesforce's clock may run ahead of this host's: an event dated later than a resume plus this cannot have been pushed before it and is not looked up.",
    ),
    ingesters_within: meta(
      z
        .string()
        .default("auto")
        .refine((v) => v === "auto" || parseDuration(v) !== undefined, {
          error: "must be auto or a duration such as 3h",
        }),
      {
        description:
          "Loki's querier.query_ingesters_within: entries dated further back are invisible to a lookup until Loki flushes their chunk. auto reads it from the Loki's /config (3h when it does not answer); 0 = Loki asks its ingesters for every range.",
        examples: ["auto", "12h"],
      },
    ),
    flush_url: optStr(
      "The ingester's /flush, which a resume may POST before looking up entries dated past ingesters_within, so they are read from the store: exact for a restart in the middle of an old backlog. Unset: such entries are pushed unchecked (said once per resume). Use only on a single-binary Loki, or one ingester, that you run.",
      ["http://loki:3100/flush"],
    ),
  }),
  "Exactly once in Loki across restarts and failovers (docs/high-availability.md, docs/egress.md).",
);

const loki = section(
  z.strictObject({
    url: meta(z.string().default(""), {
      description: "Full Loki push URL. Required when sink.type is loki.",
      examples: ["https://logs-prod-us-central1.grafana.net/loki/api/v1/push"],
    }),
    tenant_id: optStr("Tenant: the basic-auth user when a token is set, else sent as X-Scope-OrgID."),
    auth: oneOf(["basic", "bearer"], "basic", "How auth_token is sent: basic (tenant_id as user) or bearer."),
    auth_token: secret("Loki / Grafana Cloud token. Prefer auth_token_file."),
    auth_token_file: secretFile("File holding the Loki token.", ["/etc/sf2loki/secrets/loki-token"]),
    encoding: oneOf(
      ["protobuf", "json"],
      "protobuf",
      "Push encoding: protobuf+snappy, or JSON for debugging.",
    ),
    compression: oneOf(
      ["snappy", "gzip", "none"],
      "snappy",
      "JSON only: gzip compresses, snappy and none do not.",
    ),
    labels: strMap("Static stream labels (allowlisted keys; not source/event_type).", [
      { environment: "prod" },
    ]),
    structured_metadata_fields: strList(
      "Payload fields copied to structured metadata by every source.",
      [],
      [["USER_ID", "SESSION_KEY"]],
    ),
    batch,
    egress,
    limits,
    reconcile,
    tls: tlsSection("Loki", "pushes and reconcile queries"),
  }),
  "Grafana Loki. With sink.type otlp, its labels, structured_metadata_fields, batch, egress and limits still apply (they shape the pipeline, whatever the wire): docs/otlp.md.",
);

const otlp = section(
  z.strictObject({
    url: optStr("Full OTLP/HTTP logs URL. Required when sink.type is otlp.", [
      "http://loki:3100/otlp/v1/logs",
      "http://otel-collector:4318/v1/logs",
    ]),
    tenant_id: optStr(
      "Tenant, as for sink.loki: the basic-auth user when a token is set, else sent as X-Scope-OrgID.",
    ),
    auth: oneOf(["basic", "bearer"], "basic", "How auth_token is sent: basic (tenant_id as user) or bearer."),
    auth_token: secret("Token for the OTLP receiver. Prefer auth_token_file."),
    auth_token_file: secretFile("File holding the OTLP receiver's token.", [
      "/etc/sf2loki/secrets/otlp-token",
    ]),
    headers: strMap(
      "Extra HTTP headers sent with every export (not Content-Type, Content-Encoding or auth).",
      [{ "X-Org": "acme" }],
    ),
    compression: oneOf(["gzip", "none"], "gzip", "Request body compression."),
    service_name: str(
      "sf2loki",
      "The service.name resource attribute (Loki indexes it as the service_name label).",
    ),
    tls: tlsSection("the OTLP receiver", "exports"),
  }),
  "OTLP/HTTP logs (protobuf), to Loki's /otlp/v1/logs or any OpenTelemetry logs receiver; used when sink.type is otlp (docs/otlp.md).",
);

export const sinkSchema = z
  .strictObject({
    type: oneOf(
      ["loki", "otlp"],
      "loki",
      "Where lines go: Loki's push API (sink.loki) or OTLP/HTTP (sink.otlp).",
    ),
    loki,
    otlp,
  })
  .superRefine((s, ctx) => {
    if (s.type === "loki" && s.loki.url.trim() === "") {
      ctx.addIssue({
        code: "custom",
        path: ["loki", "url"],
        message: "required with sink.type loki: set the full Loki push URL (…/loki/api/v1/push)",
      });
    }
    if (s.type === "otlp" && (s.otlp.url ?? "").trim() === "") {
      ctx.addIssue({
        code: "custom",
        path: ["otlp", "url"],
        message:
          "required with sink.type otlp: set the full OTLP logs URL (Loki: …/otlp/v1/logs, a collector: …/v1/logs)",
      });
    }
  });
export type OtlpConfig = z.output<typeof otlp>;

const egressOverride = section(
  z.strictObject({
    max_lines_per_second: optNumber("Unset: sink.loki.egress.max_lines_per_second.", { min: 0 }),
    max_bytes_per_second: optNumber("Unset: sink.loki.egress.max_bytes_per_second.", { min: 0 }),
    daily_byte_budget: optNumber(
      "Unset: sink.loki.egress.daily_byte_budget. Persisted under `egress:budget:<org>`.",
      { int: true, min: 0 },
    ),
    budget_action: optOneOf(["pause", "drop"], "Unset: sink.loki.egress.budget_action."),
  }),
  "This destination's own egress governor; each unset key inherits sink.loki.egress (docs/egress.md).",
);

/**
 * `orgs[].sink.loki`: one org's own Loki destination (#123). Every key is an override; unset keys
 * inherit `sink.loki`, except that an org with its own `url` inherits no tenant or credentials (a
 * different Loki is never sent the top-level token by accident).
 */
const lokiOverride = section(
  z.strictObject({
    url: optStr("This org's Loki push URL. Unset: sink.loki.url (with its tenant and credentials).", [
      "https://logs-prod-eu-west-0.grafana.net/loki/api/v1/push",
    ]),
    tenant_id: optStr("This org's tenant (X-Scope-OrgID, or the basic-auth user with a token)."),
    auth: optOneOf(["basic", "bearer"], "How this org's auth_token is sent. Unset: sink.loki.auth."),
    auth_token: secret("This org's Loki token. Prefer auth_token_file."),
    auth_token_file: secretFile("File holding this org's Loki token.", [
      "/etc/sf2loki/secrets/loki-token-emea",
    ]),
    egress: egressOverride,
  }),
  "Per-org Loki destination: unset keys inherit sink.loki; orgs resolving to the same url, tenant and credentials share one destination (docs/egress.md).",
);

/**
 * `orgs[].sink.otlp`: one org's own OTLP destination under sink.type otlp, inheriting as
 * `orgs[].sink.loki` does: an org with its own `url` inherits no tenant, credentials or headers.
 */
const otlpOverride = section(
  z.strictObject({
    url: optStr(
      "This org's OTLP logs URL. Unset: sink.otlp.url (with its tenant, credentials and headers).",
      ["http://loki-emea:3100/otlp/v1/logs"],
    ),
    tenant_id: optStr("This org's tenant (X-Scope-OrgID, or the basic-auth user with a token)."),
    auth: optOneOf(["basic", "bearer"], "How this org's auth_token is sent. Unset: sink.otlp.auth."),
    auth_token: secret("This org's OTLP token. Prefer auth_token_file."),
    auth_token_file: secretFile("File holding this org's OTLP token.", [
      "/etc/sf2loki/secrets/otlp-token-emea",
    ]),
  }),
  "Per-org OTLP destination (sink.type otlp): unset keys inherit sink.otlp; its egress limits are orgs[].sink.loki.egress.",
);

export const orgSinkSchema = z.strictObject({ loki: lokiOverride, otlp: otlpOverride });
export type LokiOverride = z.output<typeof lokiOverride>;

export const sinkField = meta(sinkSchema, { description: "Where the lines go." });
