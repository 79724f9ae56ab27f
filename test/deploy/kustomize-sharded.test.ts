// The `sharded` overlay renders with `kubectl kustomize` and says what sharding needs: N replicas that
// all work (all Ready), a multi-org config with coordinate.sharding on a Lease, a Role that can list
// Leases, a budget that keeps a majority, and a rollout that moves shards by clean release.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { parse } from "yaml";
import { tempDir } from "../support/tmp.ts";
import {
  configText,
  deploymentOf,
  KUSTOMIZE_DIR,
  only,
  render,
  type K8sObject,
  type PolicyRule,
} from "./kustomize-render.ts";
import { materialise } from "./pod-emulation.ts";

const BIN = new URL("../../bin/sf2loki.js", import.meta.url).pathname;
const POD = { name: "sf2loki-7d9c-abcde", namespace: "observability" };
const IN_CLUSTER = { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" };

const objects = render(`${KUSTOMIZE_DIR}overlays/sharded`);

interface ShardedConfig {
  orgs: { name: string; salesforce: { client_id: string; client_secret_file: string } }[];
  state: { store: string; s3: { key: string } };
  coordinate: {
    type: string;
    sharding: { enabled: boolean };
    k8s_lease: { name: string; lease_duration: string; renew_interval: string };
  };
}
const config = parse(configText(objects)) as ShardedConfig;

/** Every `<secret>/<key>` the container reads, with a test value. */
function secretsOf(): Record<string, string> {
  const { container } = deploymentOf(objects);
  const out: Record<string, string> = {};
  for (const v of container.env ?? []) {
    const ref = v.valueFrom?.secretKeyRef;
    if (ref) out[`${ref.name}/${ref.key}`] = `test-${ref.key}`;
  }
  for (const file of [...configText(objects).matchAll(/\/etc\/sf2loki\/secrets\/([\w-]+)/g)])
    out[`sf2loki-credentials/${file[1]!}`] = `test-${file[1]!}`;
  return out;
}

test("sharded: 3 replicas, all working: every replica's readiness is /readyz and the token is mounted", () => {
  const { deployment, container } = deploymentOf(objects);
  assert.equal(deployment.spec.replicas, 3);
  assert.equal(container.readinessProbe?.httpGet.path, "/readyz");
  assert.equal(container.livenessProbe?.httpGet.path, "/healthz");
  assert.equal(deployment.spec.template.spec.automountServiceAccountToken, true);
  const env = new Map((container.env ?? []).map((v) => [v.name, v.value]));
  assert.equal(env.get("SF2LOKI_COORDINATE__K8S_LEASE__NAMESPACE"), "$(POD_NAMESPACE)");
  assert.equal(env.get("SF2LOKI_COORDINATE__K8S_LEASE__IDENTITY"), "$(POD_NAME)");
});

test("sharded: the config shards several orgs on Leases, one checkpoint document per org in S3", () => {
  const names = config.orgs.map((o) => o.name);
  assert.ok(names.length >= 2, "more orgs than one to shard");
  assert.equal(new Set(names).size, names.length);
  assert.equal(new Set(config.orgs.map((o) => o.salesforce.client_secret_file)).size, names.length);
  assert.equal(config.coordinate.type, "k8s_lease");
  assert.equal(config.coordinate.sharding.enabled, true);
  assert.equal(config.state.store, "s3", "every replica reaches every shard's document");
});

test("sharded: the Role grants get, update, create, list and delete on Leases, and nothing else", () => {
  const role = only(objects, "Role") as K8sObject & { rules: PolicyRule[] };
  assert.deepEqual(
    role.rules.map((r) => [r.apiGroups, r.resources, [...r.verbs].sort(), r.resourceNames]),
    [[["coordination.k8s.io"], ["leases"], ["create", "delete", "get", "list", "update"], undefined]],
  );
  // Exactly what the Lease clients call (the single-lease client and sharding's list/delete client).
  const dir = new URL("../../src/coordinate/k8s-lease/", import.meta.url);
  const verb: Record<string, string> = {
    read: "get",
    create: "create",
    replace: "update",
    list: "list",
    delete: "delete",
  };
  const called = new Set<string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
    for (const [, call] of readFileSync(new URL(file, dir), "utf8").matchAll(
      /api\.(\w+?)NamespacedLease\(/g,
    )) {
      const needed = verb[call!];
      assert.ok(needed !== undefined, `${file} calls ${call!}NamespacedLease, which this test does not map`);
      called.add(needed);
    }
  }
  assert.deepEqual(
    [...called].sort(),
    [...role.rules[0]!.verbs].sort(),
    "the Role grants what the code calls",
  );
  const binding = only(objects, "RoleBinding") as K8sObject & {
    roleRef: { name: string };
    subjects: { kind: string; name: string }[];
  };
  assert.equal(binding.roleRef.name, role.metadata.name);
  assert.deepEqual(
    binding.subjects.map((s) => `${s.kind}/${s.name}`),
    ["ServiceAccount/sf2loki"],
  );
});

/** Pods an eviction may take when `ready` of `replicas` are Ready (policy/v1 rounding: minAvailable % up). */
function evictable(minAvailable: string | number, replicas: number, ready: number): number {
  const min =
    typeof minAvailable === "number"
      ? minAvailable
      : Math.ceil((parseInt(minAvailable, 10) / 100) * replicas);
  return Math.max(0, ready - min);
}

test("sharded: the budget keeps a majority of replicas at every size, and selects only sf2loki pods", () => {
  const pdb = only(objects, "PodDisruptionBudget") as K8sObject & {
    spec: {
      minAvailable?: string | number;
      maxUnavailable?: unknown;
      unhealthyPodEvictionPolicy?: string;
      selector?: { matchLabels: Record<string, string> };
    };
  };
  const { deployment } = deploymentOf(objects);
  assert.equal(pdb.spec.maxUnavailable, undefined);
  assert.ok(pdb.spec.minAvailable !== undefined);
  for (const replicas of [2, 3, 4, 5, 7]) {
    const majority = Math.floor(replicas / 2) + 1;
    assert.equal(
      evictable(pdb.spec.minAvailable, replicas, replicas),
      replicas - majority,
      `${replicas} replicas`,
    );
  }
  assert.equal(evictable(pdb.spec.minAvailable, 3, 2), 0, "with one of 3 gone, no more evictions");
  assert.equal(pdb.spec.unhealthyPodEvictionPolicy, "AlwaysAllow");
  const { selector } = deployment.spec as unknown as { selector: { matchLabels: Record<string, string> } };
  const podLabels = selector.matchLabels;
  assert.deepEqual(pdb.spec.selector?.matchLabels, podLabels);
});

test("sharded: a rollout adds one replica before it stops one, and waits for it to join", () => {
  const { deployment } = deploymentOf(objects);
  const spec = deployment.spec as typeof deployment.spec & { minReadySeconds?: number };
  assert.deepEqual(spec.strategy, {
    type: "RollingUpdate",
    rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
  });
  // Long enough for every member to list the new one (half a renew interval) and hand shards over.
  const renewS = parseInt(config.coordinate.k8s_lease.renew_interval, 10);
  assert.ok((spec.minReadySeconds ?? 0) >= 2 * renewS, `minReadySeconds ${spec.minReadySeconds}`);
  const termS = deployment.spec.template.spec.terminationGracePeriodSeconds ?? 30;
  const graceS = parseInt(
    (parse(configText(objects)) as { service: { shutdown_grace: string } }).service.shutdown_grace,
    10,
  );
  assert.ok(termS >= graceS + 10, "time to commit and release every shard after the drain");
});

test("sharded: sf2loki --check on the rendered config with the container's env and mounts", () => {
  const { argv, env } = materialise({
    objects,
    root: tempDir(),
    pod: POD,
    secrets: secretsOf(),
    overrides: {},
  });
  const run = spawnSync(process.execPath, [BIN, ...argv, "--check"], {
    env: { PATH: process.env.PATH ?? "", ...IN_CLUSTER, ...env },
    encoding: "utf8",
  });
  assert.equal(run.status, 0, `--check refused the sharded overlay's config:\n${run.stdout}${run.stderr}`);
  assert.match(run.stdout, /config check OK/);
});
