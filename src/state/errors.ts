// Every error the checkpoint stores raise, each created by one factory with a stable code. The messages
// are what an operator reads: what happened, where (path or URI), and what to do next.
import { Sf2LokiError, describeError, foldLines } from "../errors.ts";

/** A conditional write lost: the stored document is not the one this process last read. */
export class StateStoreConflictError extends Sf2LokiError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("SF2LOKI_STATE_CONFLICT", message, options);
  }
}

/**
 * A write whose acknowledgement was lost and whose outcome could not be checked: not evidence of a second
 * writer, so the pipeline re-reads the document and retries instead of stopping.
 */
export class StateWriteUnverifiedError extends StateStoreConflictError {}

/** The S3/GCS checkpoint object cannot be read as a JSON object of strings. */
export class StateObjectCorruptError extends Sf2LokiError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("SF2LOKI_STATE_OBJECT_CORRUPT", message, options);
  }
}

/** The checkpoint file cannot be read as a JSON object of strings. */
export class StateFileCorruptError extends Sf2LokiError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("SF2LOKI_STATE_FILE_CORRUPT", message, options);
  }
}

/** Another process holds the checkpoint file's exclusive-instance lock. */
export class StateFileLockError extends Sf2LokiError {
  /** The holder's pid, when the lock file names one. */
  readonly holderPid: number | undefined;
  constructor(message: string, holderPid: number | undefined, options?: { cause?: unknown }) {
    super("SF2LOKI_STATE_FILE_LOCKED", message, options);
    this.holderPid = holderPid;
  }
}

/** This process may no longer commit: it lost leadership, or a newer leader advanced the epoch. */
export class StateFenceError extends Sf2LokiError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("SF2LOKI_STATE_FENCED", message, options);
  }
}

/** The store did not answer (a network error, a timeout, 5xx after the retries): an outage, not a defect. */
export class StateUnavailableError extends Sf2LokiError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("SF2LOKI_STATE_UNAVAILABLE", message, options);
  }
}

/** The object store refused our credentials (401/403) for the checkpoint object. */
/** The bucket or container the state lives in does not exist: a set-up step is missing, no retry helps. */
export class StateMissingScopeError extends Sf2LokiError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("SF2LOKI_STATE_MISSING_SCOPE", message, options);
  }
}

export class StateAccessDeniedError extends Sf2LokiError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("SF2LOKI_STATE_ACCESS_DENIED", message, options);
  }
}

/** How an object store names itself in messages; S3 and GCS fill this in. */
export interface ObjectStoreHints {
  /** `s3://bucket/key` or `gs://bucket/object`. */
  location: string;
  /** The URL the store's requests go to, when known: a proxy that refused them is named as the proxy. */
  endpoint?: string;
  /** The config key that picks the object (`state.s3.key`, `state.gcs.object_name`). */
  configKey: string;
  /** `key` or `object`, as the backend's own docs say it. */
  noun: string;
  /** The backend CLI command that removes the object, for the corrupt-object recovery. */
  removeCommand: string;
  /** The permissions the store needs, as the backend's IAM spells them. */
  permissions: string;
  /** What a persistent in-progress-write collision looks like on this backend; S3's 409 when unset. */
  busyCause?: string;
  /** What holds the object, as the backend calls it; `bucket` when unset (Azure: `container`). */
  scope?: string;
  /** That bucket or container, by name, and the backend CLI command that creates it. */
  scopeName?: string;
  createCommand?: string;
}

const TWO_WRITERS =
  "two instances sharing one state object double-ingest and clobber each other's checkpoints";

export const stateErrors = {
  /** A 412 on a first attempt, or a retry that found someone else's content: a real second writer. */
  casLost(hints: ObjectStoreHints, op: string, cause: unknown): StateStoreConflictError {
    return new StateStoreConflictError(
      `${op} on ${hints.location} lost a compare-and-swap race: the object changed since this process read it, ` +
        `so another sf2loki instance (or a \`sf2loki state set/delete/import\`) is writing the same state object; ` +
        `${TWO_WRITERS}. Point each instance at its own ${hints.noun} (${hints.configKey}) or run them as an HA ` +
        `pair with a coordinator, then restart this one.`,
      { cause },
    );
  },

  /** A retry after a lost acknowledgement found content that is not ours. */
  overwrittenAfterLostAck(hints: ObjectStoreHints, op: string, cause: unknown): StateStoreConflictError {
    return new StateStoreConflictError(
      `${op} on ${hints.location}: an earlier attempt failed or lost its response, and the retry found the object ` +
        `holding content this process did not write, so another writer (a second sf2loki instance or a ` +
        `\`sf2loki state\` command) changed it; ${TWO_WRITERS}. Point each instance at its own ${hints.noun} ` +
        `(${hints.configKey}) or run them as an HA pair, then restart this one.`,
      { cause },
    );
  },

  /** A retry after a lost acknowledgement found the object gone. */
  deletedAfterLostAck(hints: ObjectStoreHints, op: string, cause: unknown): StateStoreConflictError {
    return new StateStoreConflictError(
      `${op} on ${hints.location}: an earlier attempt failed or lost its response, and the retry found the object ` +
        `deleted by someone else; check who removes it (a lifecycle rule, an operator, a second instance), ` +
        `then restart sf2loki so it re-reads the state.`,
      { cause },
    );
  },

  /** A retry after a lost acknowledgement could not read the object back to check. */
  unverifiedAfterLostAck(hints: ObjectStoreHints, op: string, cause: unknown): StateWriteUnverifiedError {
    return new StateWriteUnverifiedError(
      `${op} on ${hints.location} could not be confirmed: an earlier attempt failed or lost its response, the object's ` +
        `version has moved, and reading it back to check whether the change was this process's own write ` +
        `failed (${describeCause(cause)}). This alone does not mean a second instance exists; the daemon re-reads ` +
        `the state and retries (at worst a bounded re-ingest, never a loss).`,
      { cause },
    );
  },

  /** S3 kept answering 409 ConditionalRequestConflict until the attempts ran out. */
  busy(hints: ObjectStoreHints, op: string, attempts: number, cause: unknown): StateStoreConflictError {
    return new StateStoreConflictError(
      `${op} on ${hints.location} kept colliding with another in-progress conditional write to the same object ` +
        `(${hints.busyCause ?? "409 ConditionalRequestConflict"}, ${attempts} attempts); another writer is ` +
        `probably using this state object: ${TWO_WRITERS}. Point each instance at its own ${hints.noun} ` +
        `(${hints.configKey}).`,
      { cause },
    );
  },

  objectCorrupt(hints: ObjectStoreHints, problem: string, cause?: unknown): StateObjectCorruptError {
    return new StateObjectCorruptError(
      `state object ${hints.location} is corrupt (${problem}); refusing to start rather than silently dropping ` +
        `checkpoints. Repair it by hand or restore an earlier version of it, or remove it ` +
        `(\`${hints.removeCommand}\`) to reset every source to its lookback default (duplicates; Pub/Sub ` +
        `topics resume from now, a gap).`,
      cause === undefined ? undefined : { cause },
    );
  },

  missingScope(hints: ObjectStoreHints, op: string, cause: unknown): StateMissingScopeError {
    const scope = hints.scope ?? "bucket";
    const named = hints.scopeName ? `${scope} ${hints.scopeName}` : scope;
    const create = hints.createCommand ? `Create it (\`${hints.createCommand}\`)` : "Create it";
    return new StateMissingScopeError(
      `${op} on ${hints.location} failed: the ${named} does not exist. ${create}, or point the state ` +
        `settings at an existing ${scope}.`,
      { cause },
    );
  },

  accessDenied(hints: ObjectStoreHints, op: string, cause: unknown): StateAccessDeniedError {
    return new StateAccessDeniedError(
      `${op} on ${hints.location} was refused (access denied): grant the sf2loki identity ${hints.permissions} ` +
        `on that ${hints.scope ?? "bucket"}, and check the credentials it runs with.`,
      { cause },
    );
  },

  fileCorrupt(path: string, problem: string, cause?: unknown): StateFileCorruptError {
    return new StateFileCorruptError(
      `state file ${path} is corrupt (${problem}); refusing to start rather than silently dropping checkpoints. ` +
        `Repair it by hand, or move it aside (\`mv ${path} ${path}.corrupt\`) to reset every source to its ` +
        `lookback default (duplicates; Pub/Sub topics resume from now, a gap).`,
      cause === undefined ? undefined : { cause },
    );
  },

  fileLocked(
    path: string,
    lockPath: string,
    holder: { pid?: number; hostname?: string } | undefined,
    thisHost: string,
  ): StateFileLockError {
    const who =
      holder?.pid === undefined
        ? "a process whose lock file cannot be read"
        : holder.hostname === undefined || holder.hostname === thisHost
          ? `pid ${holder.pid} on this host`
          : `pid ${holder.pid} on host ${holder.hostname} (its liveness cannot be checked from here)`;
    return new StateFileLockError(
      `state file ${path} is locked by ${who} (lock file ${lockPath}): is another sf2loki instance running ` +
        `against the same state directory? Two instances would double-ingest and clobber each other's ` +
        `checkpoints. Stop the other process first (the \`sf2loki state\` commands also accept --force, unsafe ` +
        `while it runs); if no sf2loki is running there, delete ${lockPath}.`,
      holder?.pid,
    );
  },

  /** The document carries a newer term's epoch: another replica leads now (never a second instance). */
  staleEpoch(location: string, op: string, mine: number, stored: number): StateFenceError {
    return new StateFenceError(
      `${op} on ${location} refused: this replica's term (epoch ${mine}) was superseded by epoch ${stored}, ` +
        `stamped by the replica that took the lease over; standing by (nothing is lost: it resumes from the ` +
        `checkpoints the new leader commits).`,
    );
  },

  /** A command could not reach the store at all; the daemon retries such failures by itself. */
  /** The store's requests go through a proxy, and the proxy is what failed (`fault`, proxy-fault.ts). */
  proxyDown(
    hints: ObjectStoreHints,
    op: string,
    fault: string,
    hint: string,
    cause: unknown,
  ): StateUnavailableError {
    return new StateUnavailableError(
      `${op} on ${hints.location} failed: ${fault}; ${hint} (a running daemon retries by itself)`,
      { cause },
    );
  },

  unavailable(location: string, cause: unknown): StateUnavailableError {
    return new StateUnavailableError(
      `the state store ${location} did not answer (${describeCause(cause)}): check its endpoint, the ` +
        `network path and the credentials, then run the command again (a running daemon retries by itself)`,
      { cause },
    );
  },

  /** Leadership ended while a write was in flight or waiting to retry; it was abandoned, not retried. */
  termEnded(location: string, op: string, cause: unknown): StateFenceError {
    return new StateFenceError(
      `${op} on ${location} abandoned: this replica's leadership ended while the write was in flight ` +
        `(${describeCause(cause)}); the next leader owns the checkpoints, so this replica stands by.`,
      { cause },
    );
  },
};

function describeCause(err: unknown): string {
  return foldLines(describeError(err));
}
