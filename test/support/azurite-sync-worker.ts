// The worker half of azurite-sync.ts: performs one call at a time against Azurite, posts the answer on
// its port, then wakes the blocked caller through the shared flag.
import { request } from "node:http";
import { parentPort, workerData, type MessagePort } from "node:worker_threads";
import { BlobServiceClient, isRestError } from "@azure/storage-blob";
import type { SyncAnswer, SyncCall, SyncReply } from "./azurite-sync.ts";

const { flag, port } = workerData as { flag: Int32Array; port: MessagePort };

function raw(call: Extract<SyncCall, { op: "raw" }>): Promise<SyncAnswer> {
  return new Promise((resolve) => {
    const req = request(call.url, { method: call.method, headers: call.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        resolve({
          status: res.statusCode ?? 502,
          headers: res.headers as Record<string, string | string[]>,
          body: Buffer.concat(chunks),
        });
      });
    });
    req.on("error", (err) => {
      resolve({ status: 599, headers: {}, body: Buffer.from(err.message) });
    });
    req.end(call.body);
  });
}

async function blob(call: Exclude<SyncCall, { op: "raw" }>): Promise<SyncAnswer> {
  const container = BlobServiceClient.fromConnectionString(call.connectionString).getContainerClient(
    call.container,
  );
  const client = container.getBlockBlobClient(call.blob);
  try {
    switch (call.op) {
      case "get": {
        // One response: the bytes and their ETag can never come from two versions.
        const resp = await client.download();
        const chunks: Buffer[] = [];
        for await (const c of resp.readableStreamBody ?? []) chunks.push(c as Buffer);
        return { status: 200, headers: { etag: resp.etag ?? "" }, body: Buffer.concat(chunks) };
      }
      case "put": {
        const resp = await client.upload(call.body, call.body.byteLength);
        return { status: 201, headers: { etag: resp.etag ?? "" }, body: Buffer.alloc(0) };
      }
      case "delete":
        await client.deleteIfExists();
        return { status: 202, headers: {}, body: Buffer.alloc(0) };
      case "create-container":
        await container.createIfNotExists();
        return { status: 201, headers: {}, body: Buffer.alloc(0) };
    }
  } catch (err) {
    if (isRestError(err) && err.statusCode !== undefined) {
      return { status: err.statusCode, headers: {}, body: Buffer.from(err.message) };
    }
    return { status: 599, headers: {}, body: Buffer.from(String(err)) };
  }
}

parentPort?.on("message", ({ id, call }: { id: number; call: SyncCall }) => {
  void (call.op === "raw" ? raw(call) : blob(call)).then((answer) => {
    port.postMessage({ id, answer } satisfies SyncReply);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
  });
});
