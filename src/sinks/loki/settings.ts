// The sink's slice of the YAML config (`sink.loki.*`), snake_case exactly as operators write it.
// The zod schema owns defaults and coercion; this file owns what the sink itself must reject.
import type { TlsFiles } from "../../util/tls-files.ts";
import type { LokiLimits } from "../receiving-loki/limits.ts";
import type { LookupSettings } from "../receiving-loki/lookup.ts";

export interface LokiSinkSettings {
  /** Full push URL, e.g. `https://logs-prod-xx.grafana.net/loki/api/v1/push`. */
  url: string;
  tenant_id?: string | null;
  /** Already-resolved secret (inline or `auth_token_file`). Blank counts as absent. */
  auth_token?: string | null;
  /** `basic` (default): tenant as Basic user. `bearer`: token as a Bearer credential. */
  auth?: "basic" | "bearer";
  encoding: "protobuf" | "json";
  /** Ignored for protobuf (always snappy). For JSON only `gzip` compresses. */
  compression: "snappy" | "gzip" | "none";
  /** Static labels; guarded against the allowlist at construction. */
  labels: Record<string, string>;
  batch: { max_line_bytes: number };
  /** Loki's `limits_config` as the operator runs it; absent means Loki's defaults. */
  limits?: LokiLimits;
  /** `sink.loki.reconcile`: whether (and where) the sink answers lookups of what Loki holds. */
  reconcile?: LookupSettings;
  /** `sink.loki.tls`: a CA bundle and client certificate for the push and the query API. */
  tls?: TlsFiles;
}

/** The wire format actually used, after resolving the compression setting against the encoding. */
export type WireFormat = "protobuf-snappy" | "json" | "json-gzip";

export function wireFormatOf(settings: Pick<LokiSinkSettings, "encoding" | "compression">): WireFormat {
  if (settings.encoding === "protobuf") return "protobuf-snappy";
  return settings.compression === "gzip" ? "json-gzip" : "json";
}
