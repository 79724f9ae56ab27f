// The daemon started exactly as each rendered Deployment would start it (args, env, mounted config
// and secrets, the lease name and identity from the manifest), against `sf2loki sim`'s world and the
// S3 and Kubernetes emulators, becomes ready on the manifest's readiness path and live on its
// liveness and startup paths. Only endpoints are overridden (SF2LOKI_* env), and the health port
// moves to an OS-chosen loopback port; kustomize.test.ts checks the manifest's port equals
// service.health_addr's.
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { DEMO_SECRET, startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { K8sEmulator } from "../support/k8s-emulator.ts";
import { S3Emulator } from "../support/s3-emulator.ts";
import { tempDir } from "../support/tmp.ts";
import { deploymentOf, renderOverlay, type Container, type Overlay } from "./kustomize-render.ts";
import { startPod, type PodProcess } from "./pod-emulation.ts";

const NAMESPACE = "observability";
const BUCKET = "my-sf2loki-state";

/** Endpoint overrides an operator would set to point the rendered config at the simulated world. */
function simOverrides(world: DemoWorld): Record<string, string> {
  return {
    SF2LOKI_SALESFORCE__LOGIN_URL: world.org.loginUrl,
    SF2LOKI_SALESFORCE__ORG_ID: world.org.orgId,
    SF2LOKI_SOURCES__PUBSUB__ENDPOINT: world.org.pubsubEndpoint,
    SF2LOKI_SOURCES__PUBSUB__INSECURE: "true",
    SF2LOKI_SINK__LOKI__URL: world.loki.pushUrl,
    SF2LOKI_SERVICE__HEALTH_ADDR: "127.0.0.1:0",
  };
}

function kubeconfig(server: string, token: string): string {
  return [
    "apiVersion: v1",
    "kind: Config",
    `clusters:\n- name: emu\n  cluster:\n    server: ${server}\n    insecure-skip-tls-verify: true`,
    `users:\n- name: pod\n  user:\n    token: ${token}`,
    "contexts:\n- name: emu\n  context:\n    cluster: emu\n    user: pod",
    "current-context: emu",
  ].join("\n");
}

async function get(url: string): Promise<{ status: number; body: string }> {
  // Generous: the pods are real processes, and on a loaded 2-core host one answer took over 2 s.
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: await res.text() };
}

/** Polls `path` until it answers `status` (the daemon is a real process; readiness follows its auth). */
async function until(
  pod: PodProcess,
  base: string,
  path: string,
  status: number,
  ms: number,
): Promise<string> {
  const deadline = Date.now() + ms;
  let last = { status: 0, body: "" };
  while (Date.now() < deadline) {
    last = await get(base + path).catch(() => last);
    if (last.status === status) return last.body;
    await delay(100);
  }
  assert.fail(
    `${path} answered ${last.status} '${last.body}', not ${status}, within ${ms} ms:\n${pod.stderrTail()}`,
  );
}

const probePaths = (c: Container): { ready: string; live: string; startup: string } => ({
  ready: c.readinessProbe!.httpGet.path,
  live: c.livenessProbe!.httpGet.path,
  startup: c.startupProbe!.httpGet.path,
});

async function startRendered(
  t: TestContext,
  overlay: Overlay,
  podName: string,
  world: DemoWorld,
  extra: Record<string, string>,
): Promise<{ pod: PodProcess; url: string; container: Container }> {
  const objects = renderOverlay(overlay);
  const { container } = deploymentOf(objects);
  const pod = startPod({
    objects,
    root: tempDir(),
    pod: { name: podName, namespace: NAMESPACE },
    secrets: {
      "sf2loki-credentials/client-id": world.org.clientId,
      "sf2loki-credentials/client-secret": DEMO_SECRET,
      "sf2loki-credentials/loki-token": "loki-token",
    },
    overrides: { ...simOverrides(world), ...extra },
  });
  t.after(() => pod.stop());
  return { pod, url: await pod.healthUrl(20_000), container };
}

async function s3(t: TestContext): Promise<Record<string, string>> {
  const emu = new S3Emulator({ buckets: [BUCKET] });
  const url = await emu.start();
  t.after(() => emu.close());
  return {
    SF2LOKI_STATE__S3__ENDPOINT_URL: url,
    AWS_ACCESS_KEY_ID: "test",
    AWS_SECRET_ACCESS_KEY: "test",
    AWS_EC2_METADATA_DISABLED: "true",
  };
}

test("single: the rendered Deployment's daemon becomes ready on its probes and ships to Loki", async (t) => {
  const world = await startDemoWorld({ eventsPerTopic: 50 });
  t.after(() => world.stop());
  const { pod, url, container } = await startRendered(t, "single", "sf2loki-abc12", world, {});
  const paths = probePaths(container);
  assert.equal(await until(pod, url, paths.startup, 200, 10_000), "ok");
  assert.equal(await until(pod, url, paths.ready, 200, 20_000), "ready");
  assert.equal((await get(url + paths.live)).status, 200);
  // Mounted secrets and env reached the daemon: it authenticated and pushed with the Loki token file.
  await until(pod, url, "/metrics", 200, 1000);
  const metrics = (await get(url + "/metrics")).body;
  assert.match(metrics, /^sf2loki_leader 1$/m);
});

test("ha-k8s-lease: two pods on the rendered Lease: one ready leader, one live standby, the Lease held by a pod name", async (t) => {
  const world = await startDemoWorld({ eventsPerTopic: 50 });
  t.after(() => world.stop());
  const api = await K8sEmulator.start();
  t.after(() => api.close());
  const store = await s3(t);
  const dir = tempDir();
  const pods: { name: string; pod: PodProcess; url: string; container: Container }[] = [];
  for (const name of ["sf2loki-5f7b9-aaaaa", "sf2loki-5f7b9-bbbbb"]) {
    const file = join(dir, `${name}.kubeconfig`);
    writeFileSync(file, kubeconfig(api.url, `token-${name}`));
    pods.push({
      name,
      ...(await startRendered(t, "ha-k8s-lease", name, world, {
        ...store,
        SF2LOKI_COORDINATE__K8S_LEASE__KUBECONFIG: file,
      })),
    });
  }
  const paths = probePaths(pods[0]!.container);
  const deadline = Date.now() + 20_000;
  let statuses: number[] = [];
  while (Date.now() < deadline) {
    statuses = await Promise.all(pods.map(async (p) => (await get(p.url + paths.ready)).status));
    if (statuses.filter((s) => s === 200).length === 1) break;
    await delay(100);
  }
  assert.deepEqual(
    [...statuses].sort(),
    [200, 503],
    `one ready leader and one standby; logs:\n${pods.map((p) => p.pod.stderrTail()).join("\n")}`,
  );
  const leader = pods[statuses.indexOf(200)]!;
  const standby = pods[statuses.indexOf(503)]!;
  assert.equal((await get(standby.url + paths.ready)).body, "standby");
  for (const p of pods) assert.equal((await get(p.url + paths.live)).status, 200, `${p.name} is live`);
  // The Lease the Role grants, in the pod's namespace, held under the pod's name.
  const lease = api.lease(NAMESPACE, "sf2loki-leader") as { spec: { holderIdentity: string } } | undefined;
  assert.equal(lease?.spec.holderIdentity, leader.name);
});

test("ha-object-lease: the rendered Deployment's daemon leads on the S3 lease and becomes ready", async (t) => {
  const world = await startDemoWorld({ eventsPerTopic: 50 });
  t.after(() => world.stop());
  const store = await s3(t);
  const { pod, url, container } = await startRendered(t, "ha-object-lease", "sf2loki-6c8d-ccccc", world, {
    ...store,
    SF2LOKI_COORDINATE__S3_LEASE__ENDPOINT_URL: store.SF2LOKI_STATE__S3__ENDPOINT_URL!,
  });
  const paths = probePaths(container);
  assert.equal(await until(pod, url, paths.ready, 200, 20_000), "ready");
  assert.equal((await get(url + paths.live)).status, 200);
});
