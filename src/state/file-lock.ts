// The file store's exclusive-instance lock: a `<state file>.lock` sidecar created with O_EXCL, naming the
// holder's pid and hostname. Node has no flock, so a crashed holder's lock is recognised as stale
// instead of vanishing by itself: on this host when its pid is gone, from another host (a shared
// volume, a replaced pod) when the holder stopped refreshing the file's mtime.
import { randomUUID } from "node:crypto";
import { readFileSync, unlinkSync } from "node:fs";
import { hostname as osHostname } from "node:os";
import { dirname } from "node:path";
import { silentLogger, type Logger } from "../obs/logger.ts";
import { systemClock, type Clock } from "../util/clock.ts";
import { stateErrors } from "./errors.ts";
import { errnoCode, nodeStateFs, type StateFs } from "./state-fs.ts";

export interface FileLockOptions {
  fs?: StateFs;
  clock?: Clock;
  logger?: Logger;
  pid?: number;
  hostname?: string;
  /** Whether `pid` is a live process on this host. */
  isAlive?: (pid: number) => boolean;
  /** How often the holder refreshes the lock's mtime; 0 disables the heartbeat. */
  heartbeatMs?: number;
  /** A lock from another host whose mtime is older than this is abandoned. */
  staleAfterMs?: number;
}

/**
 * A lock file with no holder record is either a creator between its open and its write (microseconds)
 * or something no sf2loki of this version is holding: the Python sf2loki's flock file, which it leaves
 * behind empty, or a writer that crashed there. Past this age it is taken over.
 */
const UNRECORDED_LOCK_GRACE_MS = 2000;

interface Holder {
  pid: number;
  hostname: string;
}

/** Lock paths this process holds, with the exact content it wrote, for the exit hook. */
const heldByThisProcess = new Map<string, string>();
let exitHookInstalled = false;

function releaseAllOnExit(): void {
  for (const [path, content] of heldByThisProcess) {
    try {
      if (readFileSync(path, "utf8") === content) unlinkSync(path);
    } catch {
      // Already gone, or not ours any more: nothing to release.
    }
  }
}

export class FileLock {
  readonly lockPath: string;
  readonly #statePath: string;
  readonly #fs: StateFs;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #pid: number;
  readonly #hostname: string;
  readonly #isAlive: (pid: number) => boolean;
  readonly #heartbeatMs: number;
  readonly #staleAfterMs: number;
  #content: string | undefined;
  #heartbeat: NodeJS.Timeout | undefined;

  constructor(statePath: string, opts: FileLockOptions = {}) {
    this.#statePath = statePath;
    this.lockPath = `${statePath}.lock`;
    this.#fs = opts.fs ?? nodeStateFs;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger).child({ component: "state", lock: this.lockPath });
    this.#pid = opts.pid ?? process.pid;
    this.#hostname = opts.hostname ?? osHostname();
    this.#isAlive = opts.isAlive ?? processIsAlive;
    this.#heartbeatMs = opts.heartbeatMs ?? 15_000;
    this.#staleAfterMs = opts.staleAfterMs ?? 60_000;
  }

  get held(): boolean {
    return this.#content !== undefined;
  }

  /** Takes the lock or throws StateFileLockError naming the holder. Idempotent while held. */
  async acquire(): Promise<void> {
    if (this.held) return;
    await this.#fs.mkdir(dirname(this.lockPath), { recursive: true });
    // Two rounds: one to find a stale lock and move it aside, one to take the free slot.
    for (let round = 0; round < 2; round++) {
      if (await this.#tryCreate()) return;
      const raw = await this.#readLock();
      if (raw === undefined) continue; // released between our create and our read
      const holder = parseHolder(raw);
      if (holder && (await this.#isStale(holder)) && (await this.#breakStale(raw, holder))) continue;
      if (!holder && (await this.#isUnrecordedAndOld()) && (await this.#breakStale(raw, undefined))) continue;
      throw stateErrors.fileLocked(this.#statePath, this.lockPath, holder, this.#hostname);
    }
    const raw = await this.#readLock();
    throw stateErrors.fileLocked(
      this.#statePath,
      this.lockPath,
      raw ? parseHolder(raw) : undefined,
      this.#hostname,
    );
  }

  /** Removes the lock if it is still ours. Idempotent. */
  async release(): Promise<void> {
    const content = this.#content;
    if (content === undefined) return;
    this.#content = undefined;
    clearInterval(this.#heartbeat);
    heldByThisProcess.delete(this.lockPath);
    if ((await this.#readLock()) === content) {
      await this.#fs.unlink(this.lockPath).catch(() => undefined);
    }
  }

  async #tryCreate(): Promise<boolean> {
    const content = JSON.stringify({ pid: this.#pid, hostname: this.#hostname, token: randomUUID() }) + "\n";
    let handle;
    try {
      handle = await this.#fs.open(this.lockPath, "wx", 0o644);
    } catch (err) {
      if (errnoCode(err) === "EEXIST") return false;
      throw err;
    }
    try {
      await handle.writeFile(content, "utf8");
    } finally {
      await handle.close();
    }
    this.#content = content;
    if (!exitHookInstalled) {
      process.once("exit", releaseAllOnExit);
      exitHookInstalled = true;
    }
    heldByThisProcess.set(this.lockPath, content);
    if (this.#heartbeatMs > 0) {
      this.#heartbeat = setInterval(() => void this.refresh(), this.#heartbeatMs);
      this.#heartbeat.unref();
    }
    return true;
  }

  /** Marks the lock as alive for observers on other hosts (the heartbeat calls this). */
  async refresh(): Promise<void> {
    if (!this.held) return;
    const now = new Date(this.#clock.now());
    await this.#fs.utimes(this.lockPath, now, now).catch((err: unknown) => {
      this.#log.warn({ err: String(err) }, "could not refresh the state lock file's mtime");
    });
  }

  async #readLock(): Promise<string | undefined> {
    try {
      return await this.#fs.readFile(this.lockPath, "utf8");
    } catch (err) {
      if (errnoCode(err) === "ENOENT") return undefined;
      throw err;
    }
  }

  async #isStale(holder: Holder): Promise<boolean> {
    if (holder.hostname === this.#hostname) {
      // Our own pid but not a lock this process holds: a previous incarnation (a restarted container
      // gets the same pid and hostname). Any other pid: stale once that process is gone.
      if (holder.pid === this.#pid) return !heldByThisProcess.has(this.lockPath);
      return !this.#isAlive(holder.pid);
    }
    try {
      const { mtimeMs } = await this.#fs.stat(this.lockPath);
      return this.#clock.now() - mtimeMs > this.#staleAfterMs;
    } catch {
      return false;
    }
  }

  async #isUnrecordedAndOld(): Promise<boolean> {
    try {
      const { mtimeMs } = await this.#fs.stat(this.lockPath);
      return this.#clock.now() - mtimeMs > UNRECORDED_LOCK_GRACE_MS;
    } catch {
      return false;
    }
  }

  /** Moves the stale lock aside; if what moved is not what we judged stale, puts it back. */
  async #breakStale(raw: string, holder: Holder | undefined): Promise<boolean> {
    const aside = `${this.lockPath}.stale-${this.#pid}-${randomUUID()}`;
    try {
      await this.#fs.rename(this.lockPath, aside);
    } catch (err) {
      if (errnoCode(err) === "ENOENT") return true;
      throw err;
    }
    const moved = await this.#fs.readFile(aside, "utf8").catch(() => undefined);
    if (moved !== raw) {
      await this.#fs.rename(aside, this.lockPath).catch(() => undefined);
      return false;
    }
    await this.#fs.unlink(aside).catch(() => undefined);
    if (holder) {
      this.#log.warn(
        { holderPid: holder.pid, holderHost: holder.hostname },
        "removed a stale state lock left by a process that is no longer running",
      );
    } else {
      this.#log.warn(
        { lockFile: this.lockPath },
        `took over the state lock ${this.lockPath}: it names no holder, so no sf2loki of this version holds ` +
          "it (the Python sf2loki leaves an empty flock file behind; a crashed writer can too). Safe unless " +
          "a Python sf2loki is still running against this directory: stop it before starting this one",
      );
    }
    return true;
  }
}

function parseHolder(raw: string): Holder | undefined {
  try {
    const parsed = JSON.parse(raw) as Partial<Holder>;
    if (typeof parsed.pid === "number" && typeof parsed.hostname === "string") {
      return { pid: parsed.pid, hostname: parsed.hostname };
    }
  } catch {
    // An empty or half-written lock: its creator is between open and write, or crashed there.
  }
  return undefined;
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoCode(err) === "EPERM";
  }
}
