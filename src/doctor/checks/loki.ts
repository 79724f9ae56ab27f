// `loki`: one real test push through the daemon's own sink, shaped like a real entry (the deployment's
// static labels plus structured metadata, #116), so a backend that refuses structured metadata or the
// tenant's credentials FAILs here instead of dropping every real line later. Every Loki destination an
// org under check sends to is probed: the top-level one as `loki`, an org's own one as `loki@<org>`.
import { describeError } from "../../errors.ts";
import { LogEntry, msToNs, type Labels } from "../../model.ts";
import type { DoctorEnv } from "../check.ts";
import type { DestinationWiring } from "../../daemon/wiring.ts";
import { elapsedMs, fail, pass, type CheckRow } from "../check.ts";

export const DOCTOR_SOURCE_LABEL = "sf2loki-doctor";

export async function checkLoki(
  env: DoctorEnv,
  staticLabels: Labels,
  target: DestinationWiring = env.graph.destinations[0]!,
): Promise<CheckRow> {
  const { destination } = target;
  const loki = destination.loki;
  const main = destination.name === "";
  const name = main ? "loki" : `loki@${destination.name}`;
  const keys = destination.where;
  const now = env.clock.now();
  const entry = new LogEntry({
    timestampNs: msToNs(now),
    labels: { ...staticLabels, ...loki.labels, source: DOCTOR_SOURCE_LABEL },
    line: JSON.stringify({ msg: "sf2loki doctor test write", ts: new Date(now).toISOString() }),
    structuredMetadata: { level: "info", probe: DOCTOR_SOURCE_LABEL },
    checkpoint: { key: "doctor", value: "" },
  });
  const where = main ? "" : `orgs ${destination.orgs.join(", ")} -> tenant ${loki.tenant_id ?? "(none)"}: `;
  const started = env.clock.monotonic();
  try {
    await target.sink.push([entry], env.signal);
  } catch (err) {
    const text = describeError(err);
    const hint = /HTTP (401|403)/.test(text)
      ? ` (hint: check ${keys}.tenant_id (the X-Scope-OrgID / Grafana Cloud instance id) and that ${keys}.auth_token carries the logs:write scope)`
      : /HTTP 400/.test(text)
        ? " (hint: a 400 on a one-line push usually means the backend refuses structured metadata: enable allow_structured_metadata, or use Loki >= 3.0 with schema v13)"
        : "";
    return fail(name, `${where}${text}${hint}`);
  }
  return pass(
    name,
    `${where}pushed 1 test line with structured metadata in ${elapsedMs(env.clock, started)}ms (labels {source="${DOCTOR_SOURCE_LABEL}"}; the only Loki write this command performs)`,
  );
}
