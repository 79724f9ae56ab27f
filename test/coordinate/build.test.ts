import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { buildCoordinator } from "../../src/coordinate/build.ts";
import { LeaseCoordinator } from "../../src/coordinate/lease/coordinator.ts";
import { NoopCoordinator } from "../../src/coordinate/noop.ts";
import type { CoordinateSettings } from "../../src/coordinate/settings.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { K8sEmulator } from "../support/k8s-emulator.ts";

const host = { hostname: "node-1", pid: 4242, env: {} };

function settings(overrides: Partial<CoordinateSettings> = {}): CoordinateSettings {
  return {
    type: "noop",
    file_lease: { path: "/shared/leader.lease", ttl: 30_000, renew_interval: 10_000, holder_id: "" },
    k8s_lease: {
      namespace: "sf2loki",
      name: "sf2loki-leader",
      identity: "",
      lease_duration: 30_000,
      renew_interval: 10_000,
      kubeconfig: null,
    },
    ...overrides,
  };
}

function configErrorCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return undefined;
}

describe("buildCoordinator", () => {
  let emu: K8sEmulator;
  let dir: string;

  before(async () => {
    emu = await K8sEmulator.start();
    dir = mkdtempSync(join(tmpdir(), "sf2loki-build-"));
  });

  after(async () => {
    await emu.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("builds noop by default, with no epoch fence", () => {
    const c = buildCoordinator(settings(), { host });
    assert.ok(c instanceof NoopCoordinator);
    assert.equal(c.epoch, undefined);
  });

  it("builds file_lease with the <hostname>-<pid> holder when holder_id is empty", () => {
    const c = buildCoordinator(settings({ type: "file_lease" }), { host });
    assert.ok(c instanceof LeaseCoordinator);
    assert.equal(c.identity, "node-1-4242");
    assert.equal(c.epoch, 0);
    assert.throws(() => {
      c.checkFence();
    }, /node-1-4242 does not hold the lease \/shared\/leader\.lease \(leadership lost\)/);
  });

  it("prefers $HOSTNAME for the k8s identity, then <hostname>-<pid>", () => {
    const withPod = buildCoordinator(settings({ type: "k8s_lease" }), {
      host: { ...host, env: { HOSTNAME: "pod-7" } },
    });
    assert.ok(withPod instanceof LeaseCoordinator);
    assert.equal(withPod.identity, "pod-7");
    const bare = buildCoordinator(settings({ type: "k8s_lease" }), { host });
    assert.ok(bare instanceof LeaseCoordinator);
    assert.equal(bare.identity, "node-1-4242");
  });

  it("rejects a renew interval that does not fit twice into the ttl", () => {
    const s = settings({ type: "file_lease" });
    s.file_lease.renew_interval = 15_000;
    assert.equal(
      configErrorCode(() => buildCoordinator(s, { host })),
      "SF2LOKI_CONFIG",
    );
    const k = settings({ type: "k8s_lease" });
    k.k8s_lease.lease_duration = 0;
    assert.equal(
      configErrorCode(() => buildCoordinator(k, { host })),
      "SF2LOKI_CONFIG",
    );
  });

  it("runs k8s_lease from a kubeconfig file against the API server, and releases on stop", async () => {
    const kubeconfig = join(dir, "kubeconfig.yaml");
    writeFileSync(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        `- name: emu\n  cluster:\n    server: ${emu.url}\n    insecure-skip-tls-verify: true`,
        "users:",
        "- name: dev\n  user:\n    token: dev-token",
        "contexts:",
        "- name: emu\n  context:\n    cluster: emu\n    user: dev",
        "current-context: emu",
      ].join("\n"),
    );
    const s = settings({ type: "k8s_lease" });
    s.k8s_lease.kubeconfig = kubeconfig;
    const c = buildCoordinator(s, {
      host: { ...host, env: { HOSTNAME: "pod-7" } },
      clock: new ManualClock({ auto: false }),
    });
    const ctl = new AbortController();
    const events: string[] = [];
    const done = c.run({
      onAcquire: () => {
        events.push("+");
        ctl.abort(); // stop as soon as we lead
        return Promise.resolve();
      },
      onLose: () => {
        events.push("-");
        return Promise.resolve();
      },
      signal: ctl.signal,
    });
    await done;
    assert.deepEqual(events, ["+", "-"]);
    assert.equal(c.epoch, 1);
    assert.deepEqual(
      emu.writes.map((w) => [w.method, w.token, w.holder, w.transitions, w.status]),
      [
        ["POST", "dev-token", "pod-7", 1, 201],
        ["PUT", "dev-token", undefined, 1, 200],
      ],
    );
  });

  it("fails the run with a config error outside a cluster when kubeconfig is null", async () => {
    const c = buildCoordinator(settings({ type: "k8s_lease" }), { host });
    await assert.rejects(
      c.run({
        onAcquire: () => Promise.resolve(),
        onLose: () => Promise.resolve(),
        signal: new AbortController().signal,
      }),
      (err: Error & { code?: string }) =>
        err.code === "SF2LOKI_CONFIG" && /KUBERNETES_SERVICE_HOST/.test(err.message),
    );
  });
});
