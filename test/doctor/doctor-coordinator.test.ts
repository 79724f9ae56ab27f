// doctor's `coordinator` row against the lease backends it probes without taking leadership: a
// Kubernetes Lease through the k8s emulator (read, then a server-side dry-run create or update that
// persists nothing; RBAC refusals FAIL naming the verbs), and a file lease's directory.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { cli } from "../support/cli.ts";
import { K8sEmulator } from "../support/k8s-emulator.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const dir = tempDir("sf2loki-doctor-lease-");
let world: DemoWorld;
let k8s: K8sEmulator;

before(async () => {
  world = await startDemoWorld({ eventsPerTopic: 1, topics: ["/event/LoginEventStream"] });
  k8s = await K8sEmulator.start();
});
after(async () => {
  await Promise.all([world.stop(), k8s.close()]);
});

function kubeconfig(): string {
  return writeFile(
    dir,
    "kubeconfig.yaml",
    [
      "apiVersion: v1",
      "kind: Config",
      `clusters:\n- name: emu\n  cluster:\n    server: ${k8s.url}\n    insecure-skip-tls-verify: true`,
      "users:\n- name: doctor\n  user:\n    token: doctor-token",
      "contexts:\n- name: emu\n  context:\n    cluster: emu\n    user: doctor",
      "current-context: emu",
    ].join("\n"),
  );
}

async function coordinatorRow(
  name: string,
  coordinate: Record<string, unknown>,
): Promise<{ status: string; detail: string }> {
  const config = world.config(join(dir, `${name}-state.json`));
  config.coordinate = coordinate;
  const r = await cli(["doctor", "--json", "--config", writeFile(dir, `${name}.yaml`, stringify(config))]);
  const rows = (JSON.parse(r.stdout) as { checks: { name: string; status: string; detail: string }[] })
    .checks;
  return rows.find((row) => row.name === "coordinator")!;
}

const K8S = { namespace: "sf2loki", name: "sf2loki-leader", lease_duration: "15s", renew_interval: "5s" };

describe("doctor: the coordinator row", () => {
  it("k8s_lease without a Lease: a dry-run create, nothing persisted, PASS", async () => {
    k8s.reset();
    const row = await coordinatorRow("k8s-absent", {
      type: "k8s_lease",
      k8s_lease: { ...K8S, kubeconfig: kubeconfig() },
    });
    assert.equal(row.status, "PASS", row.detail);
    assert.match(row.detail, /k8s_lease: lease does not exist yet; write probe OK \(leadership not taken\)/);
    assert.deepEqual(
      k8s.writes.map((w) => [w.method, w.dryRun, w.holder, w.status]),
      [["POST", true, "sf2loki-doctor-dry-run", 201]],
    );
    // Still absent: the next probe again finds no Lease.
    const again = await coordinatorRow("k8s-absent-2", {
      type: "k8s_lease",
      k8s_lease: { ...K8S, kubeconfig: kubeconfig() },
    });
    assert.match(again.detail, /lease does not exist yet/);
  });

  it("k8s_lease refusing the write (RBAC): FAIL naming the verbs the ServiceAccount needs", async () => {
    k8s.reset();
    k8s.failNext(1, 403, ["POST"]);
    const row = await coordinatorRow("k8s-403", {
      type: "k8s_lease",
      k8s_lease: { ...K8S, kubeconfig: kubeconfig() },
    });
    assert.equal(row.status, "FAIL");
    assert.match(row.detail, /dry-run update of Lease sf2loki\/sf2loki-leader failed: HTTP 403/);
    assert.match(row.detail, /get, create and update on leases\.coordination\.k8s\.io/);
  });

  it("file_lease: the lease directory takes a probe file, which is removed", async () => {
    const leaseDir = tempDir("sf2loki-lease-dir-");
    const row = await coordinatorRow("file", {
      type: "file_lease",
      file_lease: { path: join(leaseDir, "leader.lease") },
    });
    assert.equal(row.status, "PASS", row.detail);
    assert.match(row.detail, /^file_lease: lease does not exist yet; write probe OK/);
    assert.deepEqual(readdirSync(leaseDir), []);
  });
});
