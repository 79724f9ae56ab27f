import { test } from "node:test";
import assert from "node:assert/strict";
import { createMetrics, StateGauge } from "../../src/obs/metrics.ts";
import { startHealthServer } from "../../src/obs/health.ts";

test("health endpoints: liveness ok unless the watchdog says wedged, readiness reasons, statusz JSON, Prometheus metrics", async (t) => {
  const metrics = createMetrics({ version: "9.9.9" });
  t.after(() => metrics.shutdown());
  const leader = new StateGauge(metrics.meter, "sf2loki_leader", "1 while leading");
  leader.set(1);
  let notReady: string | undefined = "not ready";
  let degraded: string | undefined = undefined;
  let wedged: string | undefined = undefined;
  const server = await startHealthServer({
    liveness: () => wedged,
    addr: "127.0.0.1:0",
    readiness: { notReadyReason: () => notReady, degradation: () => degraded },
    status: () => ({ leader: true, seq: 12n }),
    metrics: metrics.handlePrometheus,
  });
  t.after(() => server.close());
  const get = async (path: string): Promise<[number, string]> => {
    const res = await fetch(server.url + path);
    return [res.status, await res.text()];
  };

  assert.deepEqual(await get("/healthz"), [200, "ok"]);
  wedged = "wedged: work pending and nothing attempted (no push, no commit) for 601s";
  assert.deepEqual(await get("/healthz"), [503, wedged]);
  wedged = undefined;
  assert.deepEqual(await get("/healthz"), [200, "ok"]);
  assert.deepEqual(await get("/readyz"), [503, "not ready"]);
  notReady = undefined;
  assert.deepEqual(await get("/readyz"), [200, "ready"]);
  degraded = "degraded: loki pushes failing for 16m";
  assert.deepEqual(await get("/readyz"), [503, "degraded: loki pushes failing for 16m"]);
  notReady = "standby";
  assert.deepEqual(await get("/readyz"), [503, "standby"], "not-ready wins over degradation");
  assert.deepEqual(JSON.parse((await get("/statusz"))[1]), { leader: true, seq: "12" });
  assert.equal((await get("/nope"))[0], 404);

  // Idle state gauges keep exporting on every scrape (#90); the version is only on build_info (#82).
  for (let i = 0; i < 2; i++) {
    const [status, body] = await get("/metrics");
    assert.equal(status, 200);
    assert.match(body, /^sf2loki_leader 1/m);
    assert.match(body, /^sf2loki_build_info\{version="9\.9\.9"\} 1/m);
    // The resource's service.version (Python parity) surfaces once, on target_info; never per series (#82).
    assert.match(body, /^target_info\{service_name="sf2loki",service_version="9\.9\.9"\} 1/m);
    assert.doesNotMatch(body.replace(/^(sf2loki_build_info|target_info).*$/gm, ""), /9\.9\.9/);
  }
});
