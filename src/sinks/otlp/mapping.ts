// How an sf2loki entry becomes an OTLP log record (docs/otlp.md, "The mapping"). The Loki sink's
// stream labels split in two: the org's identity becomes the resource, the rest (source, event_type,
// promoted fields) record attributes beside the structured metadata. The resource also names the
// stream (`sf2loki.stream`): Loki keys an OTLP stream by the resource attributes it indexes only, and
// under its defaults an org's EventLogFile rows (hours old) and its live events would share one stream,
// where Loki refuses whatever is over an hour behind the newest entry. A Loki told to index
// `sf2loki.stream` keeps them apart, as the Loki sink's streams are.
import type { Labels } from "../../model.ts";
import { escapeLabelValue, renderLabels } from "../receiving-loki/labels.ts";
import type { StreamQuery } from "../receiving-loki/lookup.ts";

/** Stream labels that name the org, sent as resource attributes under OpenTelemetry's names. */
export const RESOURCE_ATTRIBUTE_OF: Readonly<Record<string, string>> = {
  sf_org_id: "salesforce.org.id",
  environment: "deployment.environment",
  org: "salesforce.org.name",
};

/** The resource attribute naming an entry's stream: `<source>/<event_type>`. */
export const STREAM_ATTRIBUTE = "sf2loki.stream";

/** The Loki label a Loki that indexes STREAM_ATTRIBUTE makes of it. */
export const STREAM_LABEL = "sf2loki_stream";

/** `sf2loki.stream`'s value: entries of one source and event type are dated alike. */
export function streamName(labels: Labels): string {
  return `${labels.source ?? ""}/${labels.event_type ?? ""}`;
}

/** `service.name`'s default: Loki indexes it as `service_name`, what the Loki sink sends as a label. */
export const DEFAULT_SERVICE_NAME = "sf2loki";

/** The one instrumentation scope every record is under. */
export const SCOPE_NAME = "sf2loki";

/**
 * Stream labels not sent at all: `service.name` carries what both said (`job` and `service_name`
 * are the constant `sf2loki` on every stream).
 */
const NOT_SENT = new Set(["job", "service_name"]);

/** The resource attributes of an entry's stream labels, `service.name` first, the stream last. */
export function resourceAttributes(labels: Labels, serviceName: string): [string, string][] {
  const out: [string, string][] = [["service.name", serviceName]];
  for (const label of Object.keys(RESOURCE_ATTRIBUTE_OF)) {
    const value = labels[label];
    if (value !== undefined) out.push([RESOURCE_ATTRIBUTE_OF[label]!, value]);
  }
  out.push([STREAM_ATTRIBUTE, streamName(labels)]);
  return out;
}

/** One key per distinct resource: the identity labels' values (undefined and "" kept apart), the stream. */
export function resourceKey(labels: Labels): string {
  const { sf_org_id: id, environment: env, org } = labels;
  const part = (v: string | undefined): string => (v === undefined ? "-" : `=${v}`);
  return `${part(id)}\u0000${part(env)}\u0000${part(org)}\u0000${streamName(labels)}`;
}

/** The record attributes a stream's labels give every record of it, names ascending. */
export function labelAttributes(labels: Labels): [string, string][] {
  const out: [string, string][] = [];
  for (const k of Object.keys(labels).sort()) {
    if (NOT_SENT.has(k) || k in RESOURCE_ATTRIBUTE_OF) continue;
    out.push([k, labels[k]!]);
  }
  return out;
}

/** OpenTelemetry SeverityNumber of each `level` sf2loki derives (spec B §5.2) or a source sets. */
const SEVERITY_NUMBER: Readonly<Record<string, number>> = {
  debug: 5, // SEVERITY_NUMBER_DEBUG
  info: 9, // SEVERITY_NUMBER_INFO
  warn: 13, // SEVERITY_NUMBER_WARN
  error: 17, // SEVERITY_NUMBER_ERROR
};

/** SeverityNumber of a `level` value; 0 (unspecified) for none or one we do not know. */
export function severityNumber(level: string | undefined): number {
  return level === undefined ? 0 : (SEVERITY_NUMBER[level] ?? 0);
}

/**
 * The stream labels Loki makes of a record under its default `otlp_config` (3.4: of our resource
 * attributes it indexes service.name and deployment.environment, dots as underscores; the rest is
 * structured metadata). Used to read a 400 back onto entries when the refusal names more than one
 * stream; an export holds one sf2loki stream, so normally whatever stream Loki names is its own.
 */
export function lokiIndexLabels(labels: Labels, serviceName: string): Labels {
  const env = labels.environment;
  return env === undefined
    ? { service_name: serviceName }
    : { deployment_environment: env, service_name: serviceName };
}

/**
 * How a Loki that took an entry over OTLP finds its records again (the reconcile lookup, #27):
 * Loki's default index labels in the selector, and the stream and org as label filters, which read
 * an index label and structured metadata alike, so the query holds whether or not Loki was told to
 * index sf2loki.stream.
 */
export function lokiQueryOf(labels: Labels, serviceName: string): StreamQuery {
  const labelSet = lokiIndexLabels(labels, serviceName);
  let selector = `${renderLabels(labelSet)} | ${STREAM_LABEL}="${escapeLabelValue(streamName(labels))}"`;
  if (labels.sf_org_id !== undefined)
    selector += ` | salesforce_org_id="${escapeLabelValue(labels.sf_org_id)}"`;
  if (labels.org !== undefined) selector += ` | salesforce_org_name="${escapeLabelValue(labels.org)}"`;
  return { selector, labelSet };
}
