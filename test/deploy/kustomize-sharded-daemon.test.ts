// Three daemons started exactly as the rendered `sharded` Deployment would start them (args, env,
// mounted config and secrets, Lease namespace and identity from the pod), against one simulated
// Salesforce serving the overlay's orgs, the Kubernetes API emulator and the S3 emulator: every pod
// becomes ready, each holds one org's Lease under its pod name, and every org ships to Loki. Only
// endpoints are overridden: the orgs' login URLs and Pub/Sub endpoint (SF2LOKI_ORGS carries the
// rendered orgs with those changed), Loki, S3, the kubeconfig and the health port.
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { parse } from "yaml";
import { DEMO_SECRET } from "../../src/sim/demo-world.ts";
import { startLokiReceiver } from "../../src/sim/loki.ts";
import { startSimOrgs } from "../../src/sim/salesforce/index.ts";
import { K8sEmulator } from "../support/k8s-emulator.ts";
import { S3Emulator } from "../support/s3-emulator.ts";
import { tempDir } from "../support/tmp.ts";
import { configText, deploymentOf, KUSTOMIZE_DIR, render } from "./kustomize-render.ts";
import { startPod, type PodProcess } from "./pod-emulation.ts";

const NAMESPACE = "observability";
const BUCKET = "my-sf2loki-state";
const PODS = ["sf2loki-6f9c-aaaaa", "sf2loki-6f9c-bbbbb", "sf2loki-6f9c-ccccc"];

interface RenderedOrg {
  name: string;
  salesforce: Record<string, unknown> & { client_id: string; client_secret_file: string };
  sources: { pubsub: { topics: string[] } & Record<string, unknown> };
}

async function status(url: string): Promise<number> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).status;
  } catch {
    return 0;
  }
}

test("sharded: three pods of the rendered Deployment each lead one org on its own Lease, all ready, every org shipped", async (t) => {
  const objects = render(`${KUSTOMIZE_DIR}overlays/sharded`);
  const { container } = deploymentOf(objects);
  const orgs = (parse(configText(objects)) as { orgs: RenderedOrg[] }).orgs;
  const sims = await startSimOrgs({
    orgs: orgs.map((o) => ({
      name: o.name,
      clientSecret: DEMO_SECRET,
      topics: o.sources.pubsub.topics,
      eventsPerTopic: 20,
    })),
  });
  t.after(() => sims.stop());
  const loki = await startLokiReceiver();
  t.after(() => loki.stop());
  const api = await K8sEmulator.start();
  t.after(() => api.close());
  const s3 = new S3Emulator({ buckets: [BUCKET] });
  const s3Url = await s3.start();
  t.after(() => s3.close());

  const dir = tempDir();
  const pods: { name: string; pod: PodProcess; url: string }[] = [];
  for (const name of PODS) {
    const root = tempDir();
    const kubeconfig = join(dir, `${name}.kubeconfig`);
    writeFileSync(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        `clusters:\n- name: emu\n  cluster:\n    server: ${api.url}\n    insecure-skip-tls-verify: true`,
        `users:\n- name: pod\n  user:\n    token: token-${name}`,
        "contexts:\n- name: emu\n  context:\n    cluster: emu\n    user: pod",
        "current-context: emu",
      ].join("\n"),
    );
    const secrets: Record<string, string> = {
      "sf2loki-credentials/client-id": "unused-by-sharded",
      "sf2loki-credentials/loki-token": "loki-token",
    };
    for (const o of orgs) {
      secrets[`sf2loki-credentials/${o.name}-client-id`] = sims.org(o.name).clientId;
      secrets[`sf2loki-credentials/${o.name}-client-secret`] = DEMO_SECRET;
    }
    // The rendered orgs as an operator's SF2LOKI_ORGS: only the endpoints change. Env values are not
    // interpolated, so the client id the container's env resolves is filled in here, and the secret
    // file paths are moved under the pod's root as the mounts are.
    const endpointOrgs = orgs.map((o) => ({
      ...o,
      salesforce: {
        ...o.salesforce,
        login_url: sims.loginUrl,
        org_id: sims.org(o.name).orgId,
        client_id: sims.org(o.name).clientId,
        client_secret_file: join(root, o.salesforce.client_secret_file),
      },
      sources: {
        ...o.sources,
        pubsub: {
          ...o.sources.pubsub,
          endpoint: sims.pubsubEndpoint,
          insecure: true,
          replay_preset: "EARLIEST",
        },
      },
    }));
    const pod = startPod({
      objects,
      root,
      pod: { name, namespace: NAMESPACE },
      secrets,
      overrides: {
        SF2LOKI_ORGS: JSON.stringify(endpointOrgs),
        SF2LOKI_SINK__LOKI__URL: loki.pushUrl,
        SF2LOKI_SERVICE__HEALTH_ADDR: "127.0.0.1:0",
        SF2LOKI_STATE__S3__ENDPOINT_URL: s3Url,
        SF2LOKI_COORDINATE__K8S_LEASE__KUBECONFIG: kubeconfig,
        AWS_ACCESS_KEY_ID: name,
        AWS_SECRET_ACCESS_KEY: "test",
        AWS_EC2_METADATA_DISABLED: "true",
      },
    });
    t.after(() => pod.stop());
    pods.push({ name, pod, url: await pod.healthUrl(20_000) });
  }

  const ready = container.readinessProbe!.httpGet.path;
  const holders = (): string[] =>
    orgs.map((o) => {
      const lease = api.lease(NAMESPACE, `sf2loki-${o.name}`) as
        { spec?: { holderIdentity?: string } } | undefined;
      return lease?.spec?.holderIdentity ?? "";
    });
  const shipped = (): number => loki.countBy(() => "x").get("x") ?? 0;
  const expected = orgs.reduce((n, o) => n + o.sources.pubsub.topics.length * 20, 0);
  const deadline = Date.now() + 40_000;
  let statuses: number[] = [];
  // Judged on one snapshot: under load a lease can lapse and be taken again between two reads.
  let held: string[] = [];
  while (Date.now() < deadline) {
    statuses = await Promise.all(pods.map((p) => status(p.url + ready)));
    held = holders();
    // Three distinct holders, none empty: an unheld lease reads "" and would count as one.
    const allHeld = held.every((h) => h !== "") && new Set(held).size === PODS.length;
    if (statuses.every((s) => s === 200) && allHeld && shipped() >= expected) break;
    await delay(200);
  }
  const logs = pods.map((p) => `--- ${p.name}\n${p.pod.stderrTail().slice(-2000)}`).join("\n");
  assert.deepEqual(statuses, [200, 200, 200], `every replica is ready (all work):\n${logs}`);
  // One org per pod, each org's Lease in the pod's namespace under the overlay's name, held by a pod.
  assert.deepEqual([...held].sort(), [...PODS].sort(), `org Leases held by: ${held.join(", ")}`);
  assert.ok(shipped() >= expected, `Loki got ${shipped()} of ${expected} events`);
  // Every org's checkpoints in its own document, at the configured key with -<org>.
  const keys = new Set(s3.writes.map((w) => w.key));
  for (const o of orgs) assert.ok(keys.has(`sf2loki/state-${o.name}.json`), `no document for ${o.name}`);
});
