// `--objects LoginEvent,...`: SOQL-polled event objects (which the Python backfill could not load),
// through the daemon's own EventLogObjectsSource run once from --since, with its checkpoints moved to
// `backfill:objects:<Object>` so the daemon's `eventlog_objects:*` keys are never read or written.
import { LogEntry } from "../model.ts";
import type { ResolvedOrg } from "../config/orgs.ts";
import { EventLogObjectsSource } from "../sources/eventlog-objects/source.ts";
import { OBJECT_DEFAULTS } from "../sources/eventlog-objects/settings.ts";
import { eachEntry, type CheckpointReader, type Source } from "../sources/source.ts";
import type { OrgWiring } from "../daemon/wiring.ts";
import { BackfillKeys, type BackfillContext } from "./context.ts";

const DAEMON_PREFIX = "eventlog_objects:";

export function objectsSource(c: BackfillContext, wiring: OrgWiring, org: ResolvedOrg): Source {
  const configured = new Map(org.sources.eventlog_objects.objects.map((o) => [o.name, o]));
  const lookback = Math.max(0, c.clock.now() - c.plan.sinceMs);
  const inner = new EventLogObjectsSource({
    settings: {
      enabled: true,
      objects: c.plan.objects.map((name) => ({
        ...OBJECT_DEFAULTS,
        ...configured.get(name),
        name,
        lookback,
      })),
      transforms: org.sources.eventlog_objects.transforms,
    },
    tokens: wiring.auth,
    rest: wiring.rest,
    apiVersion: org.salesforce.api_version,
    structuredMetadataFields: c.globalFields,
    transformSalt: org.sources.transform_salt,
    clock: c.clock,
    logger: c.log,
    once: true,
  });
  return new BackfillObjects(c, inner, new BackfillKeys(org.name, "objects", org.legacyFallback));
}

class BackfillObjects implements Source {
  readonly name = "eventlog_objects" as const;
  readonly #c: BackfillContext;
  readonly #inner: Source;
  readonly #keys: BackfillKeys;

  constructor(c: BackfillContext, inner: Source, keys: BackfillKeys) {
    this.#c = c;
    this.#inner = inner;
    this.#keys = keys;
  }

  async *events(state: CheckpointReader, signal: AbortSignal): AsyncGenerator<LogEntry> {
    const view: CheckpointReader = {
      load: async (key) => (await this.#keys.load(state, this.#objectOf(key))).value,
    };
    const untilNs =
      this.#c.plan.untilMs === undefined ? undefined : BigInt(this.#c.plan.untilMs) * 1_000_000n;
    for await (const entry of eachEntry(this.#inner.events(view, signal))) {
      const token = {
        key: this.#keys.key(this.#objectOf(entry.checkpoint.key)),
        value: entry.checkpoint.value,
      };
      if (entry.checkpointOnly || (untilNs !== undefined && entry.timestampNs >= untilNs)) {
        // Past --until: the cursor moves over it, nothing is shipped.
        yield LogEntry.checkpointOnly(token, entry.timestampNs);
        continue;
      }
      entry.checkpoint = token;
      this.#c.decorate.labels(entry);
      if (this.#c.decorate.ingestTimestamps) this.#c.decorate.stampIngest(entry);
      this.#c.progress.rows(1);
      yield entry;
    }
  }

  #objectOf(key: string): string {
    return key.startsWith(DAEMON_PREFIX) ? key.slice(DAEMON_PREFIX.length) : key;
  }
}
