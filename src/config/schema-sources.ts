// `sources:` — what to collect from an org (spec A §4–§8, §15; spec B §5.5–§5.6).
import { z } from "zod";
import {
  bool,
  duration,
  int,
  meta,
  oneOf,
  optDuration,
  rate,
  secret,
  secretFile,
  section,
  str,
  strList,
  strMap,
} from "./fields.ts";

const IDENT = /^[A-Za-z0-9_]+$/;
const LABEL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const RESERVED_PROMOTED_LABELS = ["source", "event_type", "job", "sf_org_id", "environment", "org"];

const transformRule = z
  .strictObject({
    action: meta(z.enum(["hash", "mask", "drop_field", "drop_row", "regex_replace"]), {
      description: "What the rule does: hash, mask, drop_field, drop_row or regex_replace.",
    }),
    fields: strList("Fields the rule applies to (every action but drop_row)."),
    match: strMap("drop_row only: field → glob; a row matching every entry is dropped."),
    pattern: meta(z.string().nullable().default(null), { description: "regex_replace only: the pattern." }),
    replacement: str("", "regex_replace only: the replacement text."),
    name: str("", "Rule name for the rows_filtered metric; defaults to `<action>-<index>`."),
  })
  .superRefine((r, ctx) => {
    if (r.action === "drop_row") {
      if (Object.keys(r.match).length === 0)
        ctx.addIssue({ code: "custom", path: ["match"], message: "drop_row needs a non-empty match" });
      if (r.fields.length > 0)
        ctx.addIssue({ code: "custom", path: ["fields"], message: "drop_row takes match, not fields" });
    } else if (r.fields.length === 0) {
      ctx.addIssue({
        code: "custom",
        path: ["fields"],
        message: `${r.action} needs a non-empty fields list`,
      });
    }
    if (r.action === "regex_replace") {
      if (r.pattern === null)
        ctx.addIssue({ code: "custom", path: ["pattern"], message: "regex_replace needs a pattern" });
      else {
        try {
          new RegExp(r.pattern);
        } catch (err) {
          ctx.addIssue({
            code: "custom",
            path: ["pattern"],
            message: `pattern does not compile: ${(err as Error).message}`,
          });
        }
      }
    } else if (r.pattern !== null) {
      ctx.addIssue({
        code: "custom",
        path: ["pattern"],
        message: `pattern is only allowed for regex_replace`,
      });
    }
  });

const transforms = meta(z.array(transformRule).default([]), {
  description: "Transform rules (PII redaction, row filtering) applied before shipping.",
});

const identifier = (description: string) =>
  meta(z.string().regex(IDENT, "must be an identifier (letters, digits, underscore)"), { description });

const managedSubscription = z
  .strictObject({
    name: meta(z.string().regex(IDENT, "must be a developer name (letters, digits, underscore)").optional(), {
      description: "The ManagedEventSubscription's developer name (or give `id`).",
    }),
    id: meta(
      z
        .string()
        .regex(/^[a-zA-Z0-9]{15}(?:[a-zA-Z0-9]{3})?$/, "must be a 15- or 18-character record id")
        .optional(),
      { description: "The ManagedEventSubscription's Tooling API record id (or give `name`)." },
    ),
    topic: meta(z.string().regex(/^\/[^\s]+$/, "must be a topic name such as /event/LoginEventStream"), {
      description:
        "The topic the subscription carries (its Metadata topicName): entries are labelled by it, and a " +
        "subscription that carries another topic is refused with one line.",
    }),
  })
  .superRefine((m, ctx) => {
    if ((m.name === undefined) === (m.id === undefined))
      ctx.addIssue({ code: "custom", path: [], message: "give exactly one of name and id" });
  });

const pubsub = section(
  z
    .strictObject({
      enabled: bool(true, "Stream Pub/Sub topics (inert when `topics` is empty)."),
      endpoint: str("api.pubsub.salesforce.com:7443", "Pub/Sub API gRPC endpoint (host:port)."),
      insecure: bool(false, "Plaintext gRPC without TLS. Only for a local simulated org (`sf2loki sim`)."),
      default_num_requested: int(100, "Flow-control credit: events requested per fetch (1–100).", {
        min: 1,
        max: 100,
      }),
      replay_preset: oneOf(
        ["LATEST", "EARLIEST", "CUSTOM"],
        "CUSTOM",
        "Where a topic starts: CUSTOM resumes from the stored replay id (LATEST when none is stored).",
      ),
      invalid_checkpoint: oneOf(
        ["earliest", "latest"],
        "earliest",
        "When a stored replay id cannot be used (not a replay id, or Salesforce rejects it as corrupted or " +
          "expired): earliest replays the topic's retention (duplicates, no gap); latest skips to new events (a gap).",
      ),
      topics: strList(
        "Topics to subscribe to; `*` discovers the org's *EventStream channels.",
        [],
        [["/event/LoginEventStream", "/event/ApiEventStream"]],
      ),
      include: strList("Globs a discovered topic must match (`*` also matches `/`).", ["*"]),
      exclude: strList("Globs that remove discovered topics."),
      rediscovery_interval: duration("1h", "How often `*` is re-resolved; 0 discovers at startup only."),
      managed_subscriptions: meta(z.array(managedSubscription).default([]), {
        description:
          "Managed event subscriptions (Pub/Sub API beta, ManagedSubscribe): Salesforce keeps each one's replay " +
          "id, committed by sf2loki only after Loki accepted the events (docs/pubsub.md). A topic listed here " +
          "must not also be in `topics`.",
        examples: [[{ name: "SF2Loki_LogoutEvents", topic: "/event/LogoutEventStream" }]],
      }),
      discover_event_store_pairs: bool(
        false,
        "`*` also discovers /event/<X>Event wherever an <X>EventStore exists (the newer RTEM generation, e.g. ApiAnomalyEvent). Off: exactly the Python version's *EventStream set.",
      ),
      sample: meta(
        z
          .record(
            z.string(),
            z.preprocess((v) => (typeof v === "string" ? Number(v) : v), z.number().gt(0).max(1)),
          )
          .default({}),
        {
          description: "Topic glob → keep rate in (0, 1]; the first matching glob wins.",
        },
      ),
      transforms,
      bridge_max_bytes: int(134_217_728, "Byte budget of the Pub/Sub bridge queue per org; 0 disables.", {
        min: 0,
      }),
    })
    .superRefine((p, ctx) => {
      const seen = new Set<string>();
      p.managed_subscriptions.forEach((m, i) => {
        if (seen.has(m.topic))
          ctx.addIssue({
            code: "custom",
            path: ["managed_subscriptions", i, "topic"],
            message: `${m.topic} is carried by two managed subscriptions; each topic needs one`,
          });
        seen.add(m.topic);
        if (p.topics.includes(m.topic))
          ctx.addIssue({
            code: "custom",
            path: ["managed_subscriptions", i, "topic"],
            message: `${m.topic} is also in sources.pubsub.topics: it would be subscribed twice; list it in one place`,
          });
      });
    }),
  "Real-Time Event Monitoring, platform events and CDC over the Pub/Sub API (streaming lane).",
);

const eventlogObject = z
  .strictObject({
    name: identifier("Object API name, e.g. LoginEvent or MyAudit__c."),
    timestamp_field: meta(z.string().regex(IDENT, "must be an identifier").default("EventDate"), {
      description: "Field used as the watermark.",
    }),
    poll_interval: duration("5m", "How often this object is queried."),
    lookback: duration("1h", "How far back the first run (or a bad watermark) starts."),
    sample: rate("Keep rate in (0, 1]."),
    big_object: bool(false, "Big object: drained newest-first (descending), as Salesforce requires."),
    max_catchup_records: int(
      200_000,
      "Records held per descending drain; 0 = unbounded (big objects only).",
      {
        min: 0,
      },
    ),
    settle_window: optDuration(
      "How long a row may take to become queryable after its timestamp; the cursor never passes now minus this.",
      "5m for big objects, else 0s",
    ),
  })
  .transform((o) => ({ ...o, settle_window: o.settle_window ?? (o.big_object ? 300_000 : 0) }));

const eventlogObjects = section(
  z.strictObject({
    enabled: bool(false, "Poll event objects with SOQL."),
    objects: meta(z.array(eventlogObject).default([]), { description: "Objects to poll." }),
    transforms,
  }),
  "SOQL-polled event objects (bulk lane).",
);

const eventType = z.preprocess(
  (v) => (typeof v === "string" ? { name: v } : v),
  z.strictObject({
    name: meta(z.string().regex(/^(?:[A-Za-z0-9_]+|\*)$/, "must be an identifier or *"), {
      description: "EventLogFile EventType, or `*` to discover every type.",
    }),
    structured_metadata_fields: meta(z.array(z.string()).nullable().default(null), {
      description: "Columns copied to structured metadata; null inherits the sink's list, [] suppresses it.",
    }),
    labels: meta(
      z
        .array(
          z
            .string()
            .regex(LABEL_NAME, "must be a valid Loki label name")
            .refine((l) => !RESERVED_PROMOTED_LABELS.includes(l), {
              error: `must not be one of ${RESERVED_PROMOTED_LABELS.join(", ")}`,
            }),
        )
        .default([]),
      { description: "Low-cardinality columns promoted to stream labels." },
    ),
    sample: rate("Keep rate in (0, 1]."),
  }),
);

const eventlogfile = section(
  z
    .strictObject({
      enabled: bool(false, "Download EventLogFile CSVs (one Loki line per row)."),
      interval: oneOf(["Hourly", "Daily"], "Hourly", "Which log files to read."),
      event_types: meta(z.array(eventType).default([]), {
        description: "Event types (a name or an object); `*` discovers.",
        examples: [["Login", "API", { name: "URI", labels: ["USER_TYPE"] }]],
      }),
      exclude: strList("Types removed from `*` discovery."),
      poll_interval: duration("1h", "How often new files are listed."),
      lookback: duration("24h", "How far back the first run (or an unreadable watermark) starts."),
      timestamp_column: str("TIMESTAMP_DERIVED", "Row timestamp column (falls back to TIMESTAMP)."),
      page_size: int(1000, "Listing page size.", { min: 1 }),
      settle_window: optDuration(
        "Files younger than this are left for the next cycle.",
        "5m for Hourly, else 0s",
      ),
      download_max_age: duration("24h", "A file that keeps failing is abandoned after this age."),
      transforms,
      concurrency: int(4, "Files downloaded at once.", { min: 1 }),
    })
    .superRefine((e, ctx) => {
      if (e.enabled && e.event_types.length === 0)
        ctx.addIssue({ code: "custom", path: ["event_types"], message: "must not be empty when enabled" });
      const promoted = new Set(e.event_types.flatMap((t) => t.labels));
      e.transforms.forEach((t, i) => {
        if (t.action !== "drop_field") return;
        for (const f of t.fields)
          if (promoted.has(f))
            ctx.addIssue({
              code: "custom",
              path: ["transforms", i, "fields"],
              message: `drop_field cannot drop ${f}: it is promoted to a label`,
            });
      });
    })
    .transform((e) => ({ ...e, settle_window: e.settle_window ?? (e.interval === "Hourly" ? 300_000 : 0) })),
  "EventLogFile CSV downloads (bulk lane).",
);

const apexlog = section(
  z.strictObject({
    enabled: bool(false, "Ship ApexLog debug logs."),
    poll_interval: duration("1m", "How often new logs are listed."),
    lookback: duration("1h", "How far back the first run starts."),
    users: meta(z.array(z.string().regex(/^[A-Za-z0-9._%+\-@]+$/, "must be a username")).default([]), {
      description: "Usernames whose logs are shipped; empty ships every visible log.",
    }),
    max_body_bytes: int(5_242_880, "Bodies above this are skipped (a metadata line is still shipped).", {
      min: 1,
    }),
    sample: rate("Keep rate in (0, 1]."),
    transforms,
    download_max_age: duration(
      "2h",
      "A log whose body keeps failing to download is abandoned after this age.",
    ),
  }),
  "ApexLog debug logs (bulk lane, opt-in).",
);

export const sourcesSchema = z.strictObject({
  pubsub,
  eventlog_objects: eventlogObjects,
  eventlogfile,
  apexlog,
  allow_overlap: bool(false, "Allow two sources to collect the same event category (duplicates)."),
  transform_salt: secret("Salt for `hash` transforms. Prefer transform_salt_file."),
  transform_salt_file: secretFile("File holding the hash salt; read only when a hash rule exists."),
});

export const sourcesField = section(sourcesSchema, "What to collect.");
