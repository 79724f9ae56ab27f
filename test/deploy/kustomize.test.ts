// Every overlay renders with `kubectl kustomize`, and what it renders agrees with the image, the
// config it mounts and the code: probe paths and ports, args and env, security context, grace
// period, RBAC verbs, rollout and disruption budget. The daemon itself is started from the rendered
// objects in kustomize-daemon.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parse } from "yaml";
import { parseDuration } from "../../src/config/duration.ts";
import { loadConfig } from "../../src/config/load.ts";
import type { Config } from "../../src/config/schema.ts";
import { parseAddr } from "../../src/obs/health.ts";
import { tempDir } from "../support/tmp.ts";
import {
  configText,
  deploymentOf,
  imageContract,
  KUSTOMIZE_DIR,
  only,
  OVERLAYS,
  portNumber,
  render,
  renderOverlay,
  type K8sObject,
  type PolicyRule,
} from "./kustomize-render.ts";
import { materialise } from "./pod-emulation.ts";

const BIN = new URL("../../bin/sf2loki.js", import.meta.url).pathname;
const POD = { name: "sf2loki-7d9c-abcde", namespace: "observability" };
const SECRETS = {
  "sf2loki-credentials/client-id": "3MVG9-test-client",
  "sf2loki-credentials/client-secret": "test-secret",
  "sf2loki-credentials/loki-token": "test-token",
};
// The kubelet sets these in every pod; the in-cluster Lease client checks for them.
const IN_CLUSTER = { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" };

const rendered = new Map<string, K8sObject[]>(OVERLAYS.map((o) => [o, renderOverlay(o)]));
const objectsOf = (overlay: string): K8sObject[] => rendered.get(overlay)!;

/** The overlay's container materialised in a fresh directory, with no test overrides. */
const podOf = (overlay: string): { argv: string[]; env: Record<string, string> } =>
  materialise({ objects: objectsOf(overlay), root: tempDir(), pod: POD, secrets: SECRETS, overrides: {} });

/** The effective config: the mounted ConfigMap with the container's env (SF2LOKI_* overrides) applied. */
async function effectiveConfig(overlay: string): Promise<Config> {
  const { argv, env } = podOf(overlay);
  const path = argv[argv.indexOf("--config") + 1];
  assert.ok(path, "the container passes --config");
  return loadConfig(path, env);
}

for (const overlay of OVERLAYS) {
  test(`${overlay}: the rendered config passes sf2loki --check with the container's env and mounts`, () => {
    const { argv, env } = podOf(overlay);
    const out = execFileSync(process.execPath, [BIN, ...argv, "--check"], {
      env: { PATH: process.env.PATH ?? "", ...IN_CLUSTER, ...env },
      encoding: "utf8",
    });
    assert.match(out, /config check OK/);
  });

  test(`${overlay}: args and user match the image; probes, ports and Service match the health server`, () => {
    const objects = objectsOf(overlay);
    const { deployment, container } = deploymentOf(objects);
    const image = imageContract();
    assert.equal(container.command, undefined, "the image ENTRYPOINT (sf2loki) must stay in charge");
    assert.deepEqual(image.entrypoint, ["sf2loki"]);
    assert.deepEqual(container.args, image.cmd, "args are the image's CMD, spelled out");
    assert.match(container.image, /^sf2loki:/);

    const pod = deployment.spec.template.spec;
    const [uid, gid] = image.user.split(":").map(Number);
    assert.equal(pod.securityContext?.runAsUser, uid);
    assert.equal(pod.securityContext?.runAsGroup, gid);
    assert.equal(pod.securityContext?.runAsNonRoot, true);
    assert.equal(container.securityContext?.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    // A read-only root needs writable volumes where the daemon writes: /tmp and the state directory.
    const writable = (container.volumeMounts ?? [])
      .filter((m) => m.readOnly !== true)
      .map((m) => m.mountPath);
    assert.ok(writable.includes("/tmp"), "/tmp is a volume");
    assert.ok(writable.includes("/var/lib/sf2loki"), "/var/lib/sf2loki is a volume");

    const config = parse(configText(objects)) as { service: { health_addr: string; shutdown_grace: string } };
    const healthPort = parseAddr(config.service.health_addr).port;
    assert.equal(container.startupProbe?.httpGet.path, "/healthz");
    assert.equal(
      container.livenessProbe?.httpGet.path,
      "/healthz",
      "liveness never on /readyz (a standby is 503)",
    );
    assert.equal(container.readinessProbe?.httpGet.path, "/readyz");
    for (const probe of [container.startupProbe, container.livenessProbe, container.readinessProbe]) {
      assert.ok(probe, "every probe is set");
      assert.equal(portNumber(container, probe.httpGet.port), healthPort, "probe port = service.health_addr");
    }
    const service = only(objects, "Service") as K8sObject & {
      spec: { ports: { targetPort: string | number }[] };
    };
    assert.equal(portNumber(container, service.spec.ports[0]!.targetPort), healthPort);

    const graceMs = parseDuration(config.service.shutdown_grace);
    assert.ok(graceMs !== undefined, `shutdown_grace ${config.service.shutdown_grace} does not parse`);
    const graceS = graceMs / 1000;
    const termS = pod.terminationGracePeriodSeconds ?? 30;
    assert.ok(
      termS >= graceS + 10,
      `terminationGracePeriodSeconds ${termS} leaves < 10 s above shutdown_grace ${graceS}s`,
    );
    assert.ok(container.resources?.requests?.memory && container.resources.limits?.memory, "memory sized");
  });

  test(`${overlay}: every $(VAR) in env refers to a variable defined earlier`, () => {
    const { container } = deploymentOf(objectsOf(overlay));
    const seen = new Set<string>();
    for (const v of container.env ?? []) {
      for (const [, ref] of (v.value ?? "").matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g))
        assert.ok(
          seen.has(ref!),
          `${v.name} uses $(${ref}) before it is defined; Kubernetes would not expand it`,
        );
      seen.add(v.name);
    }
  });
}

test("single: one replica, never two at once, file state on a PVC, no leader election", async () => {
  const objects = objectsOf("single");
  const { deployment } = deploymentOf(objects);
  assert.equal(deployment.spec.replicas, 1);
  assert.equal(deployment.spec.strategy.type, "Recreate");
  const state = deployment.spec.template.spec.volumes?.find((v) => v.name === "state");
  const claim = (state?.persistentVolumeClaim as { claimName: string } | undefined)?.claimName;
  assert.equal(only(objects, "PersistentVolumeClaim").metadata.name, claim);
  assert.equal(state?.emptyDir, undefined);
  const config = await effectiveConfig("single");
  assert.equal(config.coordinate.type, "noop");
  assert.equal(config.state.store, "file");
});

/** The Lease verbs src/coordinate/k8s-lease/client.ts calls, from its CoordinationV1Api calls. */
function leaseVerbsInCode(): string[] {
  const code = readFileSync(new URL("../../src/coordinate/k8s-lease/client.ts", import.meta.url), "utf8");
  const verb = {
    read: "get",
    create: "create",
    replace: "update",
    patch: "patch",
    delete: "delete",
    list: "list",
  };
  const calls = [...code.matchAll(/api\.(\w+?)NamespacedLease\(/g)].map((m) => m[1] as keyof typeof verb);
  assert.ok(calls.length > 0, "found no Lease calls in client.ts");
  return [...new Set(calls.map((c) => verb[c]))].sort();
}

test("ha-k8s-lease: 2 replicas, the Role grants exactly the Lease verbs the client calls, on the configured Lease", async () => {
  const objects = objectsOf("ha-k8s-lease");
  const { deployment } = deploymentOf(objects);
  assert.equal(deployment.spec.replicas, 2);
  assert.equal(deployment.spec.template.spec.automountServiceAccountToken, true);
  const config = await effectiveConfig("ha-k8s-lease");
  const lease = config.coordinate;
  assert.equal(lease.type, "k8s_lease");
  assert.equal(lease.k8s_lease.namespace, POD.namespace, "the Lease is in the pod's namespace");
  assert.equal(lease.k8s_lease.identity, POD.name, "identity is the pod name");
  assert.ok(["s3", "gcs"].includes(config.state.store), "HA state in an object store");

  const role = only(objects, "Role") as K8sObject & { rules: PolicyRule[] };
  const leaseRules = role.rules.filter(
    (r) => r.apiGroups.includes("coordination.k8s.io") && r.resources.includes("leases"),
  );
  assert.equal(leaseRules.length, role.rules.length, "the Role grants nothing but Leases");
  assert.deepEqual([...new Set(leaseRules.flatMap((r) => r.verbs))].sort(), leaseVerbsInCode());
  for (const r of leaseRules.filter((r) => !r.verbs.includes("create")))
    assert.deepEqual(
      r.resourceNames,
      [lease.k8s_lease.name],
      "get/update are limited to the configured Lease",
    );
  const binding = only(objects, "RoleBinding") as K8sObject & {
    roleRef: { name: string };
    subjects: { kind: string; name: string }[];
  };
  assert.equal(binding.roleRef.name, role.metadata.name);
  assert.deepEqual(
    binding.subjects.map((s) => `${s.kind}/${s.name}`),
    [`ServiceAccount/${deployment.spec.template.spec.serviceAccountName}`],
  );
});

test("ha-object-lease: 2 replicas on an S3 lease, no RBAC and no API token", async () => {
  const objects = objectsOf("ha-object-lease");
  const { deployment } = deploymentOf(objects);
  assert.equal(deployment.spec.replicas, 2);
  assert.deepEqual(
    objects.filter((o) => /Role/.test(o.kind)).map((o) => o.kind),
    [],
  );
  assert.notEqual(deployment.spec.template.spec.automountServiceAccountToken, true);
  const sa = only(objects, "ServiceAccount") as K8sObject & { automountServiceAccountToken?: boolean };
  assert.equal(sa.automountServiceAccountToken, false);
  const config = await effectiveConfig("ha-object-lease");
  assert.equal(config.coordinate.type, "s3_lease");
  assert.equal(config.state.store, "s3");
});

/** Pods the PDB lets an eviction take when `ready` of `replicas` pods are Ready (policy/v1 semantics). */
function evictable(
  pdb: { maxUnavailable?: number | string; minAvailable?: number | string },
  replicas: number,
  ready: number,
): number {
  const abs = (v: number | string): number =>
    typeof v === "number" ? v : Math.ceil((parseInt(v, 10) / 100) * replicas);
  const desiredHealthy =
    pdb.maxUnavailable !== undefined ? replicas - abs(pdb.maxUnavailable) : abs(pdb.minAvailable ?? 0);
  return Math.max(0, ready - desiredHealthy);
}

for (const overlay of OVERLAYS) {
  test(`${overlay}: the leader can be evicted and a rollout can finish although only the leader is Ready`, () => {
    const objects = objectsOf(overlay);
    const { deployment } = deploymentOf(objects);
    const pdb = only(objects, "PodDisruptionBudget") as K8sObject & {
      spec: {
        maxUnavailable?: number;
        minAvailable?: number;
        unhealthyPodEvictionPolicy?: string;
        selector?: { matchLabels?: Record<string, string> };
      };
    };
    // Without a selector a policy/v1 budget counts every pod in the namespace.
    assert.deepEqual(
      pdb.spec.selector?.matchLabels,
      (deployment.spec as unknown as { selector: { matchLabels: Record<string, string> } }).selector
        .matchLabels,
      "the PDB selects exactly the Deployment's pods",
    );
    // A standby's /readyz is 503 by design: exactly one pod is Ready however many run.
    assert.ok(
      evictable(pdb.spec, deployment.spec.replicas, 1) >= 1,
      "the PDB would block evicting the leader forever",
    );
    assert.equal(
      pdb.spec.unhealthyPodEvictionPolicy,
      "AlwaysAllow",
      "a not-Ready standby must stay evictable",
    );
    const s = deployment.spec.strategy;
    if (deployment.spec.replicas > 1) {
      // Waiting for new pods to become Ready (they start as standbys) would never end.
      assert.equal(s.type, "RollingUpdate");
      assert.equal(s.rollingUpdate?.maxUnavailable, "100%");
    } else {
      assert.equal(s.type, "Recreate");
    }
  });
}

test("the NetworkPolicy component renders onto an overlay and admits only the health port", () => {
  const dir = tempDir();
  const overlay = join(KUSTOMIZE_DIR, "overlays/single");
  const component = join(KUSTOMIZE_DIR, "components/networkpolicy");
  // A throwaway overlay that adds the component to `single`, as docs/deploy.md tells operators to.
  const k = `resources: [${relative(dir, overlay)}]\ncomponents: [${relative(dir, component)}]\n`;
  writeFileSync(join(dir, "kustomization.yaml"), k);
  const objects = render(dir);
  const { container } = deploymentOf(objects);
  const np = only(objects, "NetworkPolicy") as K8sObject & {
    spec: { policyTypes: string[]; ingress: { ports: { port: string | number }[] }[] };
  };
  assert.deepEqual(np.spec.policyTypes, ["Ingress", "Egress"]);
  const ports = np.spec.ingress.flatMap((r) => r.ports.map((p) => portNumber(container, p.port)));
  assert.deepEqual(ports, [portNumber(container, "http")]);
});
