// A loopback TCP proxy that injects the network faults a real client meets and an emulator cannot
// produce on its own: a silent partition (bytes stop, sockets stay open, nobody sends FIN or RST), a
// partition that answers with RST, and a healed partition whose NAT entries are gone (new connections
// work, old ones are dead forever without anyone telling the client). Put one in front of any
// loopback server (S3/GCS/k8s emulators, Loki receiver, simulated org) and point the client at
// `proxy.port`.
//
//   const proxy = await TcpFaultProxy.start(emulator.url);  // or a port; clients use proxy.url/.port
//   proxy.blackhole();            // established connections go silent; new ones are accepted, silent
//   proxy.heal();                 // new connections forward; the silenced ones stay dead
//   proxy.heal({ revive: true }); // ...or the silenced ones resume, nothing lost (TCP retransmits)
//   proxy.refuse();               // every connection, old and new, is reset
//   proxy.resetAll();             // one-shot RST of every open connection; the mode is unchanged
//   await proxy.close();          // destroys everything; leaves no handle behind
//
// A silenced connection is paused rather than drained: its bytes wait in the kernel buffers the way
// a sender's retransmission queue holds them, so `revive` delivers them and `heal()` never does.
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";

export type FaultMode = "forward" | "blackhole" | "refuse";

/** Counters for assertions; a snapshot, so compare two reads rather than holding one. */
export interface FaultProxyStats {
  /** Connections accepted from clients, in any mode (refused ones included). */
  readonly accepted: number;
  /** Connections reset on arrival because the proxy was refusing. */
  readonly refused: number;
  /** Connections cut with a TCP RST by `refuse()` or `resetAll()`. */
  readonly reset: number;
  /** Connections that a `heal()` left dead for good. */
  readonly dead: number;
  /**
   * Connections currently open on the client side (forwarding, silenced or dead). A dead one counts
   * until its client closes it, so a test can see that a client deadline really dropped the socket.
   */
  readonly open: number;
  /** Bytes forwarded client → target. */
  readonly bytesUp: number;
  /** Bytes forwarded target → client. */
  readonly bytesDown: number;
}

type ConnState = "forward" | "silenced" | "dead";

interface Conn {
  readonly client: Socket;
  upstream: Socket | undefined;
  state: ConnState;
}

export interface TcpFaultProxyOptions {
  /** The loopback port the proxy forwards to. */
  readonly targetPort: number;
  readonly targetHost?: string;
}

export class TcpFaultProxy {
  readonly #server: Server;
  readonly #targetPort: number;
  readonly #targetHost: string;
  readonly #conns = new Set<Conn>();
  #mode: FaultMode = "forward";
  #port = 0;
  #closed = false;
  #stats = { accepted: 0, refused: 0, reset: 0, dead: 0, bytesUp: 0, bytesDown: 0 };

  /**
   * Starts a proxy on 127.0.0.1 (an ephemeral port) in front of a port, or of an
   * `http://127.0.0.1:<port>` URL such as an emulator's `url`.
   */
  static async start(target: number | string | TcpFaultProxyOptions): Promise<TcpFaultProxy> {
    const proxy = new TcpFaultProxy(targetOf(target));
    await proxy.#listen();
    return proxy;
  }

  private constructor(opts: TcpFaultProxyOptions) {
    this.#targetPort = opts.targetPort;
    this.#targetHost = opts.targetHost ?? "127.0.0.1";
    // allowHalfOpen: a client's FIN is forwarded as a FIN, not turned into a full close, so request
    // bodies that end with a half-close behave as they do without the proxy.
    this.#server = createServer({ allowHalfOpen: true }, (client) => {
      this.#accept(client);
    });
  }

  /** The port clients connect to. */
  get port(): number {
    return this.#port;
  }

  /** `127.0.0.1:<port>`, for gRPC targets. */
  get endpoint(): string {
    return `127.0.0.1:${String(this.#port)}`;
  }

  /** `http://127.0.0.1:<port>`, for HTTP clients. */
  get url(): string {
    return `http://127.0.0.1:${String(this.#port)}`;
  }

  get mode(): FaultMode {
    return this.#mode;
  }

  get stats(): FaultProxyStats {
    let open = 0;
    for (const conn of this.#conns) if (!conn.client.destroyed) open++;
    return { ...this.#stats, open };
  }

  /**
   * Silent partition: every open connection stops forwarding both ways and stays open; new
   * connections are accepted and forward nothing. No FIN, no RST: only a client deadline notices.
   */
  blackhole(): void {
    this.#mode = "blackhole";
    for (const conn of this.#conns) if (conn.state === "forward") this.#silence(conn);
  }

  /** Partition that answers: open connections are reset now, new ones are reset on arrival. */
  refuse(): void {
    this.#mode = "refuse";
    this.resetAll();
  }

  /** One-shot TCP RST of every open connection (silenced and dead ones too). The mode is kept. */
  resetAll(): number {
    const conns = [...this.#conns];
    for (const conn of conns) this.#reset(conn);
    return conns.length;
  }

  /**
   * Back to forwarding for new connections. Connections silenced by `blackhole()` stay dead forever
   * (their NAT entry is gone: nothing is forwarded, nothing is reset) unless `revive` is set, in
   * which case they resume and the bytes held during the blackhole are delivered.
   */
  heal(opts: { revive?: boolean } = {}): void {
    this.#mode = "forward";
    for (const conn of this.#conns) {
      if (conn.state !== "silenced") continue;
      if (opts.revive === true) this.#revive(conn);
      else {
        conn.state = "dead";
        this.#stats.dead++;
        // Read and drop from now on: nothing is forwarded, but a peer that closes is noticed.
        conn.client.resume();
        conn.upstream?.resume();
      }
    }
  }

  /** Destroys every connection and stops listening. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Plain destroy, not a reset: resetting a half-closed socket leaves a handle libuv never closes,
    // and the process spins at exit (see src/sim/salesforce/tcp-relay.ts).
    for (const conn of this.#conns) {
      conn.client.destroy();
      conn.upstream?.destroy();
    }
    this.#conns.clear();
    await new Promise<void>((resolve) =>
      this.#server.close(() => {
        resolve();
      }),
    );
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(0, "127.0.0.1", resolve);
    });
    this.#port = (this.#server.address() as AddressInfo).port;
  }

  #accept(client: Socket): void {
    this.#stats.accepted++;
    if (this.#closed) {
      client.destroy();
      return;
    }
    if (this.#mode === "refuse") {
      this.#stats.refused++;
      client.resetAndDestroy();
      return;
    }
    const conn: Conn = { client, upstream: undefined, state: "forward" };
    this.#conns.add(conn);
    client.on("error", ignore); // "close" follows and says whether it was an error
    client.on("close", (hadError) => {
      this.#closedSide(conn, conn.upstream, hadError);
    });
    this.#pump(conn, client, () => conn.upstream, "bytesUp");
    if (this.#mode === "blackhole") {
      // Accepted but forwarded nowhere: the target never hears of it unless it is revived.
      conn.state = "silenced";
      client.pause();
      return;
    }
    this.#connectUpstream(conn);
  }

  #connectUpstream(conn: Conn): void {
    const upstream = connect({ port: this.#targetPort, host: this.#targetHost, allowHalfOpen: true });
    conn.upstream = upstream;
    upstream.on("error", ignore);
    upstream.on("close", (hadError) => {
      this.#closedSide(conn, conn.client, hadError);
    });
    this.#pump(conn, upstream, () => conn.client, "bytesDown");
  }

  /**
   * Reads `from` and acts on the connection's state: forwards with backpressure and passes FIN along;
   * holds bytes while silenced; swallows them once dead (so the proxy still sees the peer close).
   */
  #pump(conn: Conn, from: Socket, to: () => Socket | undefined, counter: "bytesUp" | "bytesDown"): void {
    from.on("data", (chunk: Buffer) => {
      if (conn.state === "dead") return;
      if (conn.state === "silenced") {
        // A chunk already read when the blackhole began: keep it for a revive, like a retransmit.
        from.unshift(chunk);
        from.pause();
        return;
      }
      const target = to();
      if (target === undefined || target.destroyed) return; // the other side is gone; "close" follows
      this.#stats[counter] += chunk.length;
      if (!target.write(chunk)) {
        from.pause();
        target.once("drain", () => {
          if (conn.state === "forward") from.resume();
        });
      }
    });
    from.on("end", () => {
      // A peer that gives up on a dead connection is gone; its counterpart is never told.
      if (conn.state === "dead") from.destroy();
      else if (conn.state === "forward") to()?.end();
    });
  }

  #silence(conn: Conn): void {
    conn.state = "silenced";
    conn.client.pause();
    conn.upstream?.pause();
  }

  #revive(conn: Conn): void {
    conn.state = "forward";
    // Accepted during the blackhole: it reaches the target only now. An explicit pause() outlives
    // a new "data" listener, hence the resume() either way.
    if (conn.upstream === undefined) this.#connectUpstream(conn);
    else conn.upstream.resume();
    conn.client.resume();
  }

  #reset(conn: Conn): void {
    this.#conns.delete(conn);
    this.#stats.reset++;
    // A half-closed socket (a FIN seen or sent) is destroyed plainly (see close()); the others get
    // the RST a real partition answers with.
    if (conn.client.readableEnded || conn.client.writableEnded) conn.client.destroy();
    else conn.client.resetAndDestroy();
    conn.upstream?.destroy();
  }

  /**
   * One side closed. While forwarding, the other side follows: ended after its pending bytes on a
   * clean close, destroyed on an error (as a relay would). A silenced or dead connection tells the
   * other side nothing, which is the point of a blackhole; close() destroys what is left.
   */
  #closedSide(conn: Conn, other: Socket | undefined, hadError: boolean): void {
    if (conn.state === "forward" && other !== undefined) {
      if (hadError) other.destroy();
      else other.end();
    }
    if (conn.client.destroyed && conn.upstream?.destroyed !== false) this.#conns.delete(conn);
  }
}

function targetOf(target: number | string | TcpFaultProxyOptions): TcpFaultProxyOptions {
  if (typeof target === "number") return { targetPort: target };
  if (typeof target === "string") {
    const url = new URL(target);
    return { targetPort: Number(url.port), targetHost: url.hostname };
  }
  return target;
}

function ignore(): void {
  // Errors are handled on "close" (hadError); a listener must exist or the process crashes.
}
