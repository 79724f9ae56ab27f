// Multi-org wrapping (spec A §9.2, §9.3): an org's source keeps its name (and so its lane), its keys
// gain an `org=<name>:` prefix, its real entries gain org/environment/sf_org_id labels, and an
// AuthError restarts it after a backoff instead of bringing down the other orgs.
import type { LogEntry } from "../model.ts";
import { systemClock, type Clock } from "../util/clock.ts";
import { silentLogger, type Logger } from "../obs/logger.ts";
import { AuthError } from "../salesforce/auth-errors.ts";
import {
  isRun,
  type CheckpointReader,
  type CommitListener,
  type Source,
  type SourceItem,
  type SourceName,
} from "./source.ts";

export const ORG_AUTH_BACKOFF_BASE_MS = 1_000;
export const ORG_AUTH_BACKOFF_CAP_MS = 30_000;
/** How long a failed org-id lookup is left alone before the next try (#110). */
export const ORG_ID_RETRY_MS = 300_000;

export function orgKeyPrefix(orgName: string): string {
  return `org=${orgName}:`;
}

/**
 * What an org's source reads: `load(k)` reads `org=<name>:k`; for the first configured org only, a
 * miss falls back to the unprefixed `k`, the migration path from a single-org deployment.
 */
export class OrgCheckpointView implements CheckpointReader {
  readonly #state: CheckpointReader;
  readonly #prefix: string;
  readonly #legacyFallback: boolean;

  constructor(state: CheckpointReader, orgName: string, legacyFallback: boolean) {
    this.#state = state;
    this.#prefix = orgKeyPrefix(orgName);
    this.#legacyFallback = legacyFallback;
  }

  async load(key: string): Promise<string | undefined> {
    const value = await this.#state.load(this.#prefix + key);
    if (value !== undefined || !this.#legacyFallback) return value;
    return this.#state.load(key);
  }

  watchCommits(listener: CommitListener): () => void {
    const prefix = this.#prefix;
    // Entries of this org carry prefixed keys (OrgSource stamps them), so its commits do too.
    return (
      this.#state.watchCommits?.((key, value) => {
        if (key.startsWith(prefix)) listener(key.slice(prefix.length), value);
      }) ?? (() => undefined)
    );
  }
}

export interface OrgSourceOptions {
  inner: Source;
  /** `name` "" is single-org: the wrapper then passes everything through unchanged. */
  org: { name: string; environment: string };
  /** The org's id resolver (TokenProvider.orgId); failures are retried every ORG_ID_RETRY_MS. */
  orgId?: () => Promise<string>;
  /** The first configured org falls back to legacy unprefixed keys on load. */
  firstOrg: boolean;
  clock?: Clock;
  logger?: Logger;
}

export class OrgSource implements Source {
  readonly #o: OrgSourceOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  #orgId: string | undefined;
  #orgIdRetryAt = 0;

  constructor(opts: OrgSourceOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger).child({ component: "org-source", org: opts.org.name });
  }

  get name(): SourceName {
    return this.#o.inner.name;
  }

  async settled(): Promise<void> {
    await this.#o.inner.settled?.();
  }

  async *events(state: CheckpointReader, signal: AbortSignal): AsyncGenerator<SourceItem, void, undefined> {
    const { inner, org } = this.#o;
    if (org.name === "") {
      yield* inner.events(state, signal);
      return;
    }
    const view = new OrgCheckpointView(state, org.name, this.#o.firstOrg);
    const prefix = orgKeyPrefix(org.name);
    let backoff = ORG_AUTH_BACKOFF_BASE_MS;
    while (!signal.aborted) {
      try {
        for await (const item of inner.events(view, signal)) {
          backoff = ORG_AUTH_BACKOFF_BASE_MS;
          // One org-id lookup and one label object per item; the producer merges equal label sets.
          const orgId = await this.#resolveOrgId();
          if (isRun(item)) for (const entry of item) this.#stamp(entry, prefix, orgId);
          else this.#stamp(item, prefix, orgId);
          yield item;
        }
        return;
      } catch (err) {
        if (signal.aborted as boolean) return;
        if (!(err instanceof AuthError)) throw err;
        this.#log.error(
          { source: inner.name, retryInMs: backoff, err: err.message },
          `org '${org.name}' source ${inner.name} failed to authenticate; restarting it from its checkpoint`,
        );
        await this.#clock.sleep(backoff, signal).catch(() => undefined);
        backoff = Math.min(backoff * 2, ORG_AUTH_BACKOFF_CAP_MS);
      }
    }
  }

  /** The org's key prefix on the checkpoint; its labels on a real entry. */
  #stamp(entry: LogEntry, prefix: string, orgId: string | undefined): void {
    const { org } = this.#o;
    entry.checkpoint = { key: prefix + entry.checkpoint.key, value: entry.checkpoint.value };
    if (entry.checkpointOnly) return;
    entry.labels = {
      ...entry.labels,
      org: org.name,
      environment: org.environment,
      ...(orgId !== undefined ? { sf_org_id: orgId } : {}),
    };
  }

  /** Best effort and cached; a failure is not retried before ORG_ID_RETRY_MS (no per-entry lookups). */
  async #resolveOrgId(): Promise<string | undefined> {
    if (this.#orgId !== undefined || !this.#o.orgId) return this.#orgId;
    if (this.#clock.now() < this.#orgIdRetryAt) return undefined;
    try {
      this.#orgId = await this.#o.orgId();
    } catch {
      // The provider logs the failure once per window; the label is simply absent meanwhile.
      this.#orgIdRetryAt = this.#clock.now() + ORG_ID_RETRY_MS;
    }
    return this.#orgId;
  }
}
