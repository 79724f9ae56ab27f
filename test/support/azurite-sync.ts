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

export class AzuriteSync {
  readonly #worker: Worker;
  readonly #port: MessagePort;
  readonly #flag = new Int32Array(new SharedArrayBuffer(4));
  #closed = false;

  constructor() {
    const { port1, port2 } = new MessageChannel();
    this.#port = port1;
    this.#worker = new Worker(new URL("./azurite-sync-worker.ts", import.meta.url), {
      workerData: { flag: this.#flag, port: port2 },
      transferList: [port2],
    });
    this.#worker.unref();
  }

  call(call: SyncCall): SyncAnswer {
    if (this.#closed) throw new Error(`Azurite was stopped; cannot ${call.op}`);
    Atomics.store(this.#flag, 0, 0);
    this.#worker.postMessage(call);
    if (Atomics.wait(this.#flag, 0, 0, CALL_TIMEOUT_MS) === "timed-out") {
      throw new Error(`Azurite did not answer ${call.op} within ${CALL_TIMEOUT_MS} ms`);
    }
    const reply = receiveMessageOnPort(this.#port);
    if (!reply) throw new Error(`the Azurite worker woke without an answer to ${call.op}`);
    const answer = reply.message as SyncAnswer;
    return { ...answer, body: Buffer.from(answer.body) };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#port.close();
    await this.#worker.terminate();
  }
}
