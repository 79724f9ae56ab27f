// The fault proxy is test infrastructure other tests trust to mean what it says: a blackhole is
// silent (no bytes, no FIN, no RST), heal() leaves silenced connections dead unless revived, refuse
// answers with RST, and close() leaves no handle behind.
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { TcpFaultProxy } from "./tcp-fault-proxy.ts";

// Long enough for a forwarded byte to cross two loopback hops many times over.
const QUIET_MS = 80;

let echo: Server;
let echoPort = 0;
let received = 0;
const echoSockets = new Set<Socket>();

before(async () => {
  echo = createServer((s) => {
    echoSockets.add(s);
    s.on("data", (b: Buffer) => {
      received += b.length;
      s.write(b);
    });
    s.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
  echoPort = (echo.address() as AddressInfo).port;
});

after(async () => {
  for (const s of echoSockets) s.destroy();
  await new Promise<void>((resolve) => {
    echo.close(() => {
      resolve();
    });
  });
});

/** A client socket that collects what it reads and how it ended. */
interface Probe {
  readonly socket: Socket;
  text: () => string;
  ended: () => "open" | "closed" | "reset";
}

async function probe(port: number): Promise<Probe> {
  const socket = connect(port, "127.0.0.1");
  let text = "";
  let state: "open" | "closed" | "reset" = "open";
  socket.on("data", (b: Buffer) => (text += b.toString()));
  socket.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "ECONNRESET") state = "reset";
  });
  socket.on("close", () => {
    if (state === "open") state = "closed";
  });
  await once(socket, "connect");
  return { socket, text: () => text, ended: () => state };
}

async function until(cond: () => boolean, what: string, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

describe("TcpFaultProxy", () => {
  test("forwards both ways and counts connections and bytes", async () => {
    await using proxy = await TcpFaultProxy.start(echoPort);
    const p = await probe(proxy.port);
    p.socket.write("hello");
    await until(() => p.text() === "hello", "echo");
    assert.equal(proxy.mode, "forward");
    assert.deepEqual(
      { ...proxy.stats },
      { accepted: 1, refused: 0, reset: 0, dead: 0, open: 1, bytesUp: 5, bytesDown: 5 },
    );
    p.socket.destroy();
    await until(() => proxy.stats.open === 0, "the proxy to see the close");
  });

  test("blackhole: open connections go silent without FIN or RST; new ones are accepted and silent", async () => {
    await using proxy = await TcpFaultProxy.start(echoPort);
    const old = await probe(proxy.port);
    old.socket.write("a");
    await until(() => old.text() === "a", "echo before the blackhole");

    proxy.blackhole();
    const before = received;
    old.socket.write("b");
    const fresh = await probe(proxy.port); // the handshake completes: the proxy accepts
    fresh.socket.write("c");
    await sleep(QUIET_MS);

    assert.equal(received, before, "the target received nothing");
    assert.equal(old.text(), "a");
    assert.equal(fresh.text(), "");
    assert.equal(old.ended(), "open");
    assert.equal(fresh.ended(), "open");
    assert.equal(proxy.stats.accepted, 2);
    assert.equal(proxy.stats.open, 2);
    assert.equal(proxy.stats.bytesUp, 1);
    old.socket.destroy();
    fresh.socket.destroy();
  });

  test("heal(): new connections forward; blackholed ones stay dead forever, silently", async () => {
    await using proxy = await TcpFaultProxy.start(echoPort);
    const old = await probe(proxy.port);
    proxy.blackhole();
    old.socket.write("lost");
    proxy.heal();
    assert.equal(proxy.mode, "forward");
    assert.equal(proxy.stats.dead, 1);

    const fresh = await probe(proxy.port);
    fresh.socket.write("new");
    await until(() => fresh.text() === "new", "a new connection to forward");
    old.socket.write("still lost");
    await sleep(QUIET_MS);
    assert.equal(old.text(), "");
    assert.equal(old.ended(), "open", "a dead connection is never reset or closed");

    // Blackholing again silences the healthy connection only; the dead one stays dead.
    proxy.blackhole();
    proxy.heal({ revive: true });
    old.socket.write("!");
    fresh.socket.write("!");
    await until(() => fresh.text() === "new!", "the revived connection");
    await sleep(QUIET_MS);
    assert.equal(old.text(), "");

    // A client that gives up on its dead connection is seen to close it (its deadline worked).
    assert.equal(proxy.stats.open, 2);
    old.socket.destroy();
    await until(() => proxy.stats.open === 1, "the proxy to see the dead connection closed");
    fresh.socket.destroy();
  });

  test("heal({ revive: true }): silenced connections resume and get the bytes held meanwhile", async () => {
    await using proxy = await TcpFaultProxy.start(echoPort);
    const old = await probe(proxy.port);
    proxy.blackhole();
    old.socket.write("held");
    const during = await probe(proxy.port); // accepted during the blackhole: never reached the target
    during.socket.write("late");
    await sleep(QUIET_MS);
    assert.equal(old.text(), "");
    proxy.heal({ revive: true });
    await until(() => old.text() === "held", "the held bytes after the revive");
    await until(() => during.text() === "late", "the connection accepted during the blackhole");
    assert.equal(proxy.stats.dead, 0);
    old.socket.destroy();
    during.socket.destroy();
  });

  test("refuse: open connections are reset, new ones are reset on arrival; heal() lets them in", async () => {
    await using proxy = await TcpFaultProxy.start(echoPort);
    const old = await probe(proxy.port);
    proxy.refuse();
    await until(() => old.ended() === "reset", "the open connection to be reset");

    const fresh = connect(proxy.port, "127.0.0.1");
    const [err] = (await once(fresh, "error")) as [NodeJS.ErrnoException];
    assert.equal(err.code, "ECONNRESET");
    assert.equal(proxy.stats.refused, 1);
    assert.equal(proxy.stats.reset, 1);

    proxy.heal();
    const healed = await probe(proxy.port);
    healed.socket.write("ok");
    await until(() => healed.text() === "ok", "a connection after the heal");
    healed.socket.destroy();
  });

  test("resetAll() is one-shot: every open connection, dead ones included, is reset; the mode stays", async () => {
    await using proxy = await TcpFaultProxy.start(echoPort);
    const dead = await probe(proxy.port);
    proxy.blackhole();
    proxy.heal();
    const live = await probe(proxy.port);
    assert.equal(proxy.resetAll(), 2);
    await until(() => dead.ended() === "reset" && live.ended() === "reset", "both resets");
    assert.equal(proxy.mode, "forward");
    const next = await probe(proxy.port);
    next.socket.write("x");
    await until(() => next.text() === "x", "a connection after the reset");
    next.socket.destroy();
  });

  test("close() destroys every connection and leaves no handle behind", async () => {
    const baseline = handles();
    const proxy = await TcpFaultProxy.start(echoPort);
    const live = await probe(proxy.port);
    live.socket.write("x");
    await until(() => live.text() === "x", "echo");
    proxy.blackhole();
    const silent = await probe(proxy.port);
    live.socket.end(); // half-closed from the client side while silenced
    await proxy.close();
    await proxy.close(); // idempotent
    await until(() => live.ended() !== "open" && silent.ended() !== "open", "the clients to see the close");
    await until(
      () => handles() <= baseline,
      `handles back to ${String(baseline)} (now ${String(handles())})`,
    );
  });
});

function handles(): number {
  return process.getActiveResourcesInfo().filter((r) => r.startsWith("TCP")).length;
}
