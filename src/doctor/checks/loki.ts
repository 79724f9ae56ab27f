// `loki`: one real test push through the daemon's own sink, shaped like a real entry (the deployment's
// static labels plus structured metadata, #116), so a backend that refuses structured metadata or the
// tenant's credentials FAILs here instead of dropping every real line later.
import { describeError } from "../../errors.ts";
import { LogEntry, msToNs, type Labels } from "../../model.ts";
import type { DoctorEnv } from "../check.ts";
import { elapsedMs, fail, pass, type CheckRow } from "../check.ts";

export const DOCTOR_SOURCE_LABEL = "sf2loki-doctor";

export async function checkLoki(env: DoctorEnv, staticLabels: Labels): Promise<CheckRow> {
  const loki = env.config.sink.loki;
  const now = env.clock.now();
  const entry = new LogEntry({
    timestampNs: msToNs(now),
    labels: { ...staticLabels, ...loki.labels, source: DOCTOR_SOURCE_LABEL },
    line: JSON.stringify({ msg: "sf2loki doctor test write", ts: new Date(now).toISOString() }),
    structuredMetadata: { level: "info", probe: DOCTOR_SOURCE_LABEL },
    checkpoint: { key: "doctor", value: "" },
  });
  const started = env.clock.monotonic();
  try {
    await env.graph.sink.push([entry], env.signal);
  } catch (err) {
    const text = describeError(err);
    const hint = /HTTP (401|403)/.test(text)
      ? " (hint: check sink.loki.tenant_id (the X-Scope-OrgID / Grafana Cloud instance id) and that sink.loki.auth_token carries the logs:write scope)"
      : /HTTP 400/.test(text)
        ? " (hint: a 400 on a one-line push usually means the backend refuses structured metadata: enable allow_structured_metadata, or use Loki >= 3.0 with schema v13)"
        : "";
    return fail("loki", `${text}${hint}`);
  }
  return pass(
    "loki",
    `pushed 1 test line with structured metadata in ${elapsedMs(env.clock, started)}ms (labels {source="${DOCTOR_SOURCE_LABEL}"}; the only Loki write this command performs)`,
  );
}
