// Microsoft's Azure Storage emulator, Azurite, from node_modules: the blob service only, in memory, on
// 127.0.0.1 and a port the OS picks, with telemetry off. The tests talk to the real server
// implementation rather than one we wrote; faults go in through the proxy in azurite-proxy.ts.
import { spawn, type ChildProcessByStdio } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Readable } from "node:stream";
import { AzuriteSync } from "./azurite-sync.ts";

/** Azurite's well-known development account (public, documented; not a secret). */
export const AZURITE_ACCOUNT = "devstoreaccount1";
export const AZURITE_KEY =
  "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

const READY = /successfully listens on (http:\/\/\S+)/;
const START_TIMEOUT_MS = 20_000;

/** A connection string for the development account at `blobUrl` (Azurite itself, or a proxy before it). */
export function azuriteConnectionString(blobUrl: string): string {
  return (
    `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};` +
    `BlobEndpoint=${blobUrl}/${AZURITE_ACCOUNT};`
  );
}

export class Azurite {
  readonly #child: ChildProcessByStdio<null, Readable, Readable>;
  /** `http://127.0.0.1:<port>`, the blob service's origin. */
  readonly url: string;
  #sync: AzuriteSync | undefined;

  private constructor(child: ChildProcessByStdio<null, Readable, Readable>, url: string) {
    this.#child = child;
    this.url = url;
  }

  static async start(): Promise<Azurite> {
    const main = join(
      dirname(createRequire(import.meta.url).resolve("azurite/package.json")),
      "dist/src/blob/main.js",
    );
    const child = spawn(
      process.execPath,
      [
        main,
        "--blobHost",
        "127.0.0.1",
        "--blobPort",
        "0",
        "--inMemoryPersistence",
        "--extentMemoryLimit",
        "64",
        "--skipApiVersionCheck",
        "--disableTelemetry",
        "--silent",
        "--loose",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`Azurite did not start within ${START_TIMEOUT_MS} ms:\n${output}`));
      }, START_TIMEOUT_MS);
      const onData = (chunk: Buffer) => {
        output += chunk.toString("utf8");
        const m = READY.exec(output);
        if (m?.[1]) {
          clearTimeout(timer);
          child.stdout.off("data", onData);
          child.stderr.off("data", onData);
          resolve(m[1]);
        }
      };
      child.stdout.on("data", onData);
      child.stderr.on("data", onData);
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`Azurite exited (${String(code ?? signal)}) before listening:\n${output}`));
      });
    });
    // Keep draining (warnings, a crash report) so its pipes never fill up.
    child.stdout.resume();
    child.stderr.resume();
    return new Azurite(child, url);
  }

  /** Synchronous calls to this Azurite, for test code that cannot yield; one worker, made on first use. */
  get sync(): AzuriteSync {
    this.#sync ??= new AzuriteSync();
    return this.#sync;
  }

  async stop(): Promise<void> {
    await this.#sync?.close();
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => {
      this.#child.once("exit", () => {
        resolve();
      });
    });
    this.#child.kill("SIGTERM");
    await exited;
  }
}
