// `telemetry`: an empty OTLP export (a valid no-op) POSTed with the exporter's own headers, so wrong
// credentials show up now rather than as a silent gap in the dashboards.
import type { Dispatcher } from "../../util/http-dispatchers.ts";
import { originDispatcher } from "../../util/routed-dispatchers.ts";
import { telemetryHeaders } from "../../daemon/app.ts";
import type { Config } from "../../config/schema.ts";
import { describeError } from "../../errors.ts";
import { fail, pass, skip, type CheckRow } from "../check.ts";

export async function checkTelemetry(config: Config, signal: AbortSignal): Promise<CheckRow> {
  const t = config.service.telemetry;
  if (!t.enabled) return skip("telemetry", "service.telemetry disabled");
  if (t.endpoint === "")
    return fail(
      "telemetry",
      "service.telemetry.enabled but endpoint is empty; set service.telemetry.endpoint",
    );
  let status: number;
  // Direct or through the environment's proxy, as the metric exporter itself goes (obs/lazy-otlp.ts).
  let http: Dispatcher | undefined;
  try {
    const url = new URL(t.endpoint);
    http = originDispatcher(url.origin, { connectMs: 10_000, responseMs: 10_000 });
    const res = await http.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: "POST",
      headers: { "content-type": "application/x-protobuf", ...telemetryHeaders(config) },
      body: new Uint8Array(),
      signal,
    });
    status = res.statusCode;
    await res.body.dump();
  } catch (err) {
    return fail(
      "telemetry",
      `POST to ${t.endpoint} failed: ${describeError(err)}; check service.telemetry.endpoint`,
    );
  } finally {
    await http?.destroy();
  }
  if (status === 401 || status === 403) {
    return fail(
      "telemetry",
      `${t.endpoint} answered HTTP ${status}: the credentials default to the Loki tenant and token; Grafana Cloud OTLP needs its own instance id in service.telemetry.basic_auth_user and a token with metrics:write`,
    );
  }
  if (status < 200 || status >= 300) return fail("telemetry", `${t.endpoint} answered HTTP ${status}`);
  return pass("telemetry", `${t.endpoint} accepted an empty export (HTTP ${status})`);
}
