// Every Lease call ends (#17): the coordinator bounds each call (renew_interval / 2 by default) and
// hands the deadline's signal to the client's fetch, so a call on a connection that died silently is
// aborted (its socket closed), not merely raced, and the next call goes out on a fresh connection.
// The real @kubernetes/client-node goes through a fault proxy in front of the k8s emulator. (The
// client builds a new undici Agent per call when TLS options are set, so no socket is kept alive
// between calls: the fault that matters is a partition during a call.)
import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { LeaseTimeoutError } from "../../src/coordinate/errors.ts";
import { K8sLeaseBackend } from "../../src/coordinate/k8s-lease/backend.ts";
import { leaseApiFor } from "../../src/coordinate/k8s-lease/client.ts";
import { withTimeout } from "../../src/coordinate/lease/waits.ts";
import { systemClock } from "../../src/util/clock.ts";
import { K8sEmulator } from "../support/k8s-emulator.ts";
import { TcpFaultProxy } from "../support/tcp-fault-proxy.ts";
import { failureOf, timed, waitFor } from "../support/timing.ts";

const NS = "sf2loki";
const NAME = "sf2loki-leader";
const SHORT = 300;

function kubeConfig(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "emulator", server, skipTLSVerify: true }],
    users: [{ name: "replica", token: "token-a" }],
    contexts: [{ name: "emulator", cluster: "emulator", user: "replica" }],
    currentContext: "emulator",
  });
  return kc;
}

async function rig(t: TestContext) {
  const emu = await K8sEmulator.start();
  const proxy = await TcpFaultProxy.start(emu.url);
  t.after(async () => {
    await proxy.close();
    await emu.close();
  });
  const backend = new K8sLeaseBackend({
    namespace: NS,
    name: NAME,
    connect: () => Promise.resolve(leaseApiFor(kubeConfig(proxy.url), NS, NAME)),
  });
  await backend.open();
  t.after(() => backend.close());
  // The coordinator's own bound (LeaseCoordinator.#call), here with a short deadline.
  const read = () =>
    withTimeout(systemClock, SHORT, new AbortController().signal, `read of lease ${NS}/${NAME}`, (s) =>
      backend.read(s),
    );
  return { emu, proxy, backend, read };
}

describe("k8s Lease call deadlines", { timeout: 15_000 }, () => {
  it("a read in a silent partition is aborted at the deadline, and the next read after heal() succeeds", async (t) => {
    const r = await rig(t);
    assert.equal(await r.read(), undefined, "no Lease yet");

    r.proxy.blackhole();
    let caught: unknown;
    const ms = await timed(async () => {
      caught = await failureOf(r.read());
    });
    assert.ok(caught instanceof LeaseTimeoutError, String(caught));
    assert.equal(caught.code, "SF2LOKI_LEASE_TIMEOUT");
    assert.ok(ms >= SHORT - 20 && ms < SHORT + 500, `took ${ms.toFixed(0)} ms`);

    // Two silenced sockets: the first read's (idle in the Agent that call built) and the timed-out
    // one. heal() leaves both dead and lets the proxy notice a close: the aborted fetch closed its
    // socket; the idle one waits for undici's keep-alive timeout.
    assert.equal(r.proxy.stats.open, 2);
    r.proxy.heal();
    await waitFor(() => r.proxy.stats.open === 1, "the client to close the aborted call's socket");
    assert.equal(await r.read(), undefined, "the next read answers on a fresh connection");
    t.diagnostic(`silent partition → LeaseTimeoutError after ${ms.toFixed(0)} ms, socket closed`);
  });
});
