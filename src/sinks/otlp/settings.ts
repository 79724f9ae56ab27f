// The OTLP sink's slice of the config: the transport from `sink.otlp` (or an org's own
// `orgs[].sink.otlp`), and what shapes a batch from `sink.loki` (line cap, Loki's limits).
import type { LokiLimits } from "../receiving-loki/limits.ts";
import type { LookupSettings } from "../receiving-loki/lookup.ts";
import type { TlsFiles } from "../../util/tls-files.ts";
import type { AuthSettings } from "../wire/auth.ts";

export interface OtlpSinkSettings extends AuthSettings {
  /** Full OTLP/HTTP logs URL: Loki's `…/otlp/v1/logs` or a collector's `…/v1/logs`. */
  url: string;
  /** Extra headers on every export; content and auth headers are the sink's own. */
  headers: Record<string, string>;
  compression: "gzip" | "none";
  /** The `service.name` resource attribute. */
  service_name: string;
  batch: { max_line_bytes: number };
  /** The receiving Loki's limits_config, checked before sending; absent means Loki's defaults. */
  limits?: LokiLimits;
  /**
   * `sink.loki.reconcile`: look up what a Loki holds before re-sending. Used when the URL is Loki's
   * `…/otlp/v1/logs` (its query API is beside it) or `query_url` names the query API.
   */
  reconcile?: LookupSettings;
  /** `sink.otlp.tls`: a CA bundle and client certificate for the receiver. */
  tls?: TlsFiles;
}
