// How an sf2loki entry becomes an OTLP log record (docs/otlp.md, "The mapping"). The Loki sink's
// stream labels split in two: the org's identity becomes the resource (one ResourceLogs per org), the
// rest (source, event_type, promoted fields) record attributes beside the structured metadata.
import type { Labels } from "../../model.ts";

/** Stream labels that name the org, sent as resource attributes under OpenTelemetry's names. */
export const RESOURCE_ATTRIBUTE_OF: Readonly<Record<string, string>> = {
  sf_org_id: "salesforce.org.id",
  environment: "deployment.environment",
  org: "salesforce.org.name",
};

/** `service.name`'s default: Loki indexes it as `service_name`, what the Loki sink sends as a label. */
export const DEFAULT_SERVICE_NAME = "sf2loki";

/** The one instrumentation scope every record is under. */
export const SCOPE_NAME = "sf2loki";

/**
 * Stream labels not sent at all: `service.name` carries what both said (`job` and `service_name`
 * are the constant `sf2loki` on every stream).
 */
const NOT_SENT = new Set(["job", "service_name"]);

/** The resource attributes of an entry's stream labels, `service.name` first. */
export function resourceAttributes(labels: Labels, serviceName: string): [string, string][] {
  const out: [string, string][] = [["service.name", serviceName]];
  for (const label of Object.keys(RESOURCE_ATTRIBUTE_OF)) {
    const value = labels[label];
    if (value !== undefined) out.push([RESOURCE_ATTRIBUTE_OF[label]!, value]);
  }
  return out;
}

/** One key per distinct resource: the identity labels' values (undefined and "" kept apart). */
export function resourceKey(labels: Labels): string {
  const { sf_org_id: id, environment: env, org } = labels;
  return `${id === undefined ? "-" : `=${id}`}\u0000${env === undefined ? "-" : `=${env}`}\u0000${org === undefined ? "-" : `=${org}`}`;
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
 * structured metadata). Loki names a refused record by these, so a 400 is read back onto entries
 * through them. A Loki configured to index more (salesforce.org.id) names streams this does not
 * predict: its 400s are then isolated by bisection instead.
 */
export function lokiIndexLabels(labels: Labels, serviceName: string): Labels {
  const env = labels.environment;
  return env === undefined
    ? { service_name: serviceName }
    : { deployment_environment: env, service_name: serviceName };
}
