// The root configuration schema: the single source of truth for every key, type, default and
// description. Loader, docs, example and JSON Schema are all generated from it.
import { z } from "zod";
import { meta, section } from "./fields.ts";
import { salesforceField, salesforceSchema } from "./schema-salesforce.ts";
import { sourcesField, sourcesSchema } from "./schema-sources.ts";
import { orgSinkSchema, sinkField } from "./schema-sink.ts";
import { coordinateField, stateField } from "./schema-state.ts";
import { serviceField } from "./schema-service.ts";
import { deadletterField } from "./schema-deadletter.ts";
import { enrichField } from "./schema-enrich.ts";

const orgSchema = z.strictObject({
  name: meta(z.string().regex(/^[A-Za-z0-9_-]+$/, "must match ^[A-Za-z0-9_-]+$"), {
    description: "Org name: the `org` label value and the `org=<name>:` checkpoint key prefix.",
    examples: ["prod"],
  }),
  salesforce: meta(salesforceSchema, { description: "This org's connection." }),
  sources: section(sourcesSchema, "This org's sources."),
  sink: section(orgSinkSchema, "This org's own Loki destination, when not the top-level sink.loki."),
});

/** Labels that carry an org's identity; under multi-org a static value would overwrite them (#128). */
const ORG_IDENTITY_LABELS = ["org", "sf_org_id", "environment"];

export const configSchema = z
  .strictObject({
    salesforce: salesforceField,
    orgs: meta(z.array(orgSchema).default([]), {
      description:
        "Multi-org: one entry per org, each with its own salesforce and sources blocks. Mutually exclusive with top-level salesforce/sources.",
    }),
    sources: sourcesField,
    sink: sinkField,
    state: stateField,
    coordinate: coordinateField,
    deadletter: deadletterField,
    enrich: enrichField,
    service: serviceField,
  })
  .superRefine((c, ctx) => {
    const multi = c.orgs.length > 0;
    if (c.salesforce !== null && multi) {
      ctx.addIssue({
        code: "custom",
        path: [],
        message: "set EITHER top-level 'salesforce' (single-org) OR 'orgs' (multi-org), not both",
      });
    }
    if (c.salesforce === null && !multi) {
      ctx.addIssue({
        code: "custom",
        path: [],
        message: "no Salesforce org configured; set top-level 'salesforce' or a non-empty 'orgs' list",
      });
    }
    if (!multi) return;
    const seen = new Set<string>();
    const dupes = new Set<string>();
    for (const o of c.orgs) (seen.has(o.name) ? dupes : seen).add(o.name);
    if (dupes.size > 0) {
      ctx.addIssue({
        code: "custom",
        path: ["orgs"],
        message: `duplicate org name(s) [${[...dupes].join(", ")}]; each orgs[].name must be unique (it is the org label value and checkpoint key prefix)`,
      });
    }
    if (JSON.stringify(c.sources) !== JSON.stringify(sourcesSchema.parse({}))) {
      ctx.addIssue({
        code: "custom",
        path: ["sources"],
        message:
          "top-level 'sources' cannot be combined with 'orgs'; move per-org source config under each entry",
      });
    }
    // An org's destination keys for the sink not in use would be silently ignored: refuse them.
    const unused = c.sink.type === "otlp" ? "loki" : "otlp";
    for (const o of c.orgs) {
      const block = o.sink[unused];
      const set = (["url", "tenant_id", "auth_token", "auth_token_file"] as const).filter(
        (k) => (block[k] ?? "").trim() !== "",
      );
      if (set.length > 0) {
        ctx.addIssue({
          code: "custom",
          path: ["orgs"],
          message: `org '${o.name}': orgs[].sink.${unused}.${set[0]} is set but sink.type is ${c.sink.type}; move it to orgs[].sink.${c.sink.type} or remove it`,
        });
      }
    }
    for (const label of ORG_IDENTITY_LABELS) {
      if (label in c.sink.loki.labels) {
        ctx.addIssue({
          code: "custom",
          path: ["sink", "loki", "labels", label],
          message: `static label '${label}' is not allowed with 'orgs': it would overwrite each org's own ${label} label`,
        });
      }
    }
  });

export type Config = z.output<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
export type SalesforceConfig = NonNullable<Config["salesforce"]>;
export type SourcesConfig = Config["sources"];
export type OrgConfig = Config["orgs"][number];
