// The lease as a JSON file on storage every replica shares (NFS, EFS, an RWX volume). There is no
// compare-and-swap on a plain file: a write re-reads and compares the content hash first, then
// renames; the coordinator re-reads after `confirmDelayMs` to learn whose rename won (spec §2.3).
import { createHash } from "node:crypto";
import * as fsp from "node:fs/promises";
import { describeError } from "../../errors.ts";
import { LeaseUnreadableError } from "../errors.ts";
import type { LeaseBackend, LeaseRecord, LeaseSnapshot, LeaseWriteResult } from "../lease/backend.ts";
import { replaceFile, type LeaseFs } from "./atomic-write.ts";
import { parseLease, serializeLease } from "./document.ts";

export interface FileLeaseBackendOptions {
  path: string;
  ttlMs: number;
  renewIntervalMs: number;
  fs?: LeaseFs;
}

export class FileLeaseBackend implements LeaseBackend {
  readonly kind = "file_lease";
  readonly where: string;
  readonly confirmDelayMs: number;
  /** `<lease>.epoch`: the highest epoch ever claimed here, so a lost lease file cannot reset it (#99). */
  readonly sidecarPath: string;
  readonly #ttlMs: number;
  readonly #fs: LeaseFs;

  constructor(opts: FileLeaseBackendOptions) {
    this.where = opts.path;
    this.sidecarPath = `${opts.path}.epoch`;
    this.#ttlMs = opts.ttlMs;
    this.#fs = opts.fs ?? fsp;
    // Long enough for a competing rename to land, short enough not to slow failover (spec §2.3).
    this.confirmDelayMs = Math.min(1000, Math.max(50, opts.renewIntervalMs * 0.1));
  }

  async read(signal: AbortSignal): Promise<LeaseSnapshot | undefined> {
    const bytes = await this.#readBytes(this.where, signal);
    if (bytes === undefined) return undefined;
    const version = contentVersion(bytes);
    const parsed = parseLease(bytes, this.#ttlMs);
    return "record" in parsed
      ? { record: parsed.record, version }
      : { record: undefined, version, problem: parsed.problem };
  }

  async write(
    record: LeaseRecord,
    expected: string | undefined,
    signal: AbortSignal,
  ): Promise<LeaseWriteResult> {
    // The compare half of the swap. If it cannot read, it throws and nothing is written: a replica
    // never rewrites a lease it cannot see (#96).
    const current = await this.read(signal);
    if (current?.version !== expected) return { ok: false };
    const text = serializeLease(record, this.#ttlMs);
    await replaceFile(this.#fs, this.where, text, signal);
    return { ok: true, version: contentVersion(Buffer.from(text)) };
  }

  async readEpochFloor(signal: AbortSignal): Promise<number | undefined> {
    const value = await this.#readSidecar(signal);
    if (value === "corrupt") {
      throw new LeaseUnreadableError(this.sidecarPath, "the epoch sidecar does not hold an integer");
    }
    return value;
  }

  async recordEpoch(epoch: number, signal: AbortSignal): Promise<void> {
    const current = await this.#readSidecar(signal);
    if (typeof current === "number" && current >= epoch) return;
    await replaceFile(this.#fs, this.sidecarPath, `${epoch}\n`, signal);
  }

  async #readSidecar(signal: AbortSignal): Promise<number | undefined | "corrupt"> {
    const bytes = await this.#readBytes(this.sidecarPath, signal);
    if (bytes === undefined) return undefined;
    const text = Buffer.from(bytes).toString("utf8").trim();
    return /^\d{1,15}$/.test(text) ? Number(text) : "corrupt";
  }

  async #readBytes(path: string, signal: AbortSignal): Promise<Uint8Array | undefined> {
    try {
      return await this.#fs.readFile(path, { signal });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw new LeaseUnreadableError(path, describeError(err), { cause: err });
    }
  }
}

function contentVersion(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}
