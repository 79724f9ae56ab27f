// The OTLP sink straight to a real Loki's /otlp/v1/logs as one tenant, gzip, defaults otherwise, and
// the per-tenant otlp_config docs/otlp.md ("Streams") tells an operator to set.
import { createOtlpSink, type OtlpSink, type OtlpSinkDeps } from "../../../src/sinks/otlp/sink.ts";
import type { OtlpSinkSettings } from "../../../src/sinks/otlp/settings.ts";

export function otlpSinkTo(
  lokiUrl: string,
  tenant: string,
  over: Partial<OtlpSinkSettings> = {},
  deps: OtlpSinkDeps = {},
): OtlpSink {
  return createOtlpSink(
    {
      url: `${lokiUrl}/otlp/v1/logs`,
      tenant_id: tenant,
      headers: {},
      compression: "gzip",
      service_name: "sf2loki",
      batch: { max_line_bytes: 262_144 },
      ...over,
    },
    deps,
  );
}

/** A tenant's limits_config block that indexes sf2loki.stream: one Loki stream per sf2loki stream. */
export const INDEX_STREAM = {
  otlp_config: {
    resource_attributes: {
      attributes_config: [{ action: "index_label", attributes: ["sf2loki.stream"] }],
    },
  },
};
