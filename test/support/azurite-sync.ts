// Synchronous calls to Azurite, for test code that must look at or change the stored blob between two
// steps without yielding (the shared object-store cases and the fault proxy's hooks are synchronous).
// A worker thread makes the call while this thread waits on a shared flag, as synckit does.
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from "node:worker_threads";

export type SyncCall =
  | { op: "raw"; method: string; url: string; headers: Record<string, string | string[]>; body: Buffer }
  | { op: "get" | "delete" | "create-container"; connectionString: string; container: string; blob: string }
  | { op: "put"; connectionString: string; container: string; blob: string; body: Buffer };

export interface SyncAnswer {
  /** 599: no HTTP answer at all (the body holds the socket error). */
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
}

/** Generous: Azurite answers in a few ms, but the test host is shared. */
const CALL_TIMEOUT_MS = 15_000;

/** What the worker posts back: the answer, with the id of the call it answers. */
export interface SyncReply {
  id: number;
  answer: SyncAnswer;
}

export class AzuriteSync {
  readonly #worker: Worker;
  readonly #port: MessagePort;
  readonly #flag = new Int32Array(new SharedArrayBuffer(4));
  readonly #timeoutMs: number;
  #nextId = 0;
  #closed = false;

  constructor(timeoutMs = CALL_TIMEOUT_MS) {
    this.#timeoutMs = timeoutMs;
    const { port1, port2 } = new MessageChannel();
    this.#port = port1;
    this.#worker = new Worker(new URL("./azurite-sync-worker.ts", import.meta.url), {
      workerData: { flag: this.#flag, port: port2 },
      transferList: [port2],
    });
    this.#worker.unref();
  }

  /**
   * Makes `call` and blocks until its answer. A call that timed out may still be answered later: that
   * answer carries the old call's id and is dropped, so it can never pass for the answer to a later call.
   */
  call(call: SyncCall): SyncAnswer {
    if (this.#closed) throw new Error(`Azurite was stopped; cannot ${call.op}`);
    const id = ++this.#nextId;
    const deadline = performance.now() + this.#timeoutMs;
    Atomics.store(this.#flag, 0, 0);
    this.#worker.postMessage({ id, call });
    for (;;) {
      // The worker posts before it raises the flag: whatever woke us is on the port by now.
      for (let reply = receiveMessageOnPort(this.#port); reply; reply = receiveMessageOnPort(this.#port)) {
        const { id: answered, answer } = reply.message as SyncReply;
        if (answered === id) return { ...answer, body: Buffer.from(answer.body) };
      }
      const left = deadline - performance.now();
      if (left <= 0 || Atomics.wait(this.#flag, 0, 0, left) === "timed-out") {
        throw new Error(`Azurite did not answer ${call.op} within ${this.#timeoutMs} ms`);
      }
      Atomics.store(this.#flag, 0, 0);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#port.close();
    await this.#worker.terminate();
  }
}
