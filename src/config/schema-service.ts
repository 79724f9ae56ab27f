// `service:` — process-level settings: logs, health, shutdown, telemetry (spec B §6, §9).
import { z } from "zod";
import { bool, duration, meta, oneOf, secret, secretFile, section, str, strMap } from "./fields.ts";

const telemetry = section(
  z.strictObject({
    enabled: bool(false, "Push metrics over OTLP/HTTP (the /metrics endpoint is always served)."),
    endpoint: str("", "Full OTLP/HTTP metrics URL.", [
      "https://otlp-gateway-prod-us-central-0.grafana.net/otlp/v1/metrics",
    ]),
    auth: oneOf(["basic", "none"], "basic", "basic (defaults to the Loki tenant and token) or none."),
    basic_auth_user: str("", "Basic-auth user; falls back to sink.loki.tenant_id."),
    basic_auth_token: secret("Basic-auth token; falls back to the Loki token. Prefer basic_auth_token_file."),
    basic_auth_token_file: secretFile("File holding the telemetry token."),
    headers: strMap("Extra headers, merged over the computed Authorization header."),
    export_interval: duration("60s", "How often metrics are pushed."),
    resource_attributes: strMap("OTel resource attributes merged over service.name/version."),
  }),
  "OTLP/HTTP metrics push.",
);

const watchdog = section(
  z.strictObject({
    stall_timeout: duration(
      "2m",
      "A leader whose pipeline has work but neither commits nor attempts a push this long, or whose checkpoint store has failed this long, turns /readyz 503 and resigns its lease so another replica leads; 0 disables.",
    ),
    liveness_timeout: duration(
      "10m",
      "/healthz fails once the pipeline has had work but attempted nothing at all (no push, no commit) this long, so Kubernetes restarts a wedged process; 0 disables.",
    ),
  }),
  "The leader's liveness watchdog.",
);

const service = z.strictObject({
  log_level: meta(
    z
      .string()
      .transform((s) => s.toLowerCase())
      .pipe(z.enum(["debug", "info", "warning", "warn", "error", "critical"]))
      .default("info"),
    { description: "debug, info, warning, error or critical (case-insensitive)." },
  ),
  log_format: meta(z.enum(["json", "logfmt", "text"]).optional(), {
    description:
      "json or logfmt: the Python version's structlog keys (event, level, timestamp, fields), one record per line on stdout; text: human, on stderr.",
    derivedDefault: "json; text when stderr is a terminal",
  }),
  health_addr: str(
    ":8080",
    "Address of /healthz, /readyz, /statusz and /metrics (host:port, `:port` for all interfaces).",
  ),
  shutdown_grace: duration(
    "25s",
    "How long a stop may take to drain before the rest is abandoned (and resent later).",
  ),
  unready_after_sink_failing: duration(
    "15m",
    "/readyz fails once Loki has been failing this long; 0 disables.",
  ),
  watchdog,
  telemetry,
});

export const serviceField = section(service, "Process settings.");
