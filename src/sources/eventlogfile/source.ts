// EventLogFileSource (`eventlogfile`, bulk lane; spec A §7): each cycle resolves the types (explicit
// plus wildcard discovery), measures the server's clock skew, then runs one worker per type behind a
// semaphore; workers feed a small bounded channel that this stream drains in arrival order.
import { describeError } from "../../errors.ts";
import type { LogEntry } from "../../model.ts";
import { EventLogFileClient } from "../../salesforce/eventlogfile/client.ts";
import { isThrottled } from "../../salesforce/rest-errors.ts";
import type { ElfCursor } from "./checkpoint.ts";
import { Channel, Semaphore } from "./channel.ts";
import type { EventLogFileSettings, EventLogFileTypeSettings } from "./settings.ts";
import { processEventType, type ElfRunContext } from "./worker.ts";
import { jittered, pause } from "../shaping/cycle.ts";
import { pollingKit, type PollingKit, type PollingSourceDeps } from "../shaping/deps.ts";
import type { CheckpointReader, Source, SourceItem } from "../source.ts";

/** Batches of rows (at most 64 KiB of CSV each) buffered between the workers and the consumer. */
const BRIDGE_CAPACITY = 2;
const SKEW_APPLY_MS = 30_000;
const SKEW_WARN_MS = 60_000;

export interface EventLogFileSourceOptions extends PollingSourceDeps {
  settings: EventLogFileSettings;
  /** Discovered types whose category another source of this org owns (the overlap guard decides). */
  ownedElsewhere?: (eventType: string) => boolean;
}

export class EventLogFileSource implements Source {
  readonly name = "eventlogfile" as const;
  readonly #settings: EventLogFileSettings;
  readonly #client: EventLogFileClient;
  readonly #ownedElsewhere: (eventType: string) => boolean;
  #lastCycleSeconds: number | undefined;
  #skewWarned = false;
  readonly #k: PollingKit;

  constructor(opts: EventLogFileSourceOptions) {
    this.#settings = opts.settings;
    this.#k = pollingKit(opts, "eventlogfile", opts.settings.transforms);
    this.#client = new EventLogFileClient({ rest: this.#k.rest, clock: this.#k.clock, meter: this.#k.meter });
    this.#ownedElsewhere = opts.ownedElsewhere ?? (() => false);
    this.#k.meter
      .createObservableGauge("sf2loki_eventlogfile_cycle_seconds", {
        description: "Duration of the last EventLogFile cycle",
      })
      .addCallback((r) => {
        if (this.#lastCycleSeconds !== undefined) r.observe(this.#lastCycleSeconds);
      });
  }

  async *events(state: CheckpointReader, signal: AbortSignal): AsyncGenerator<SourceItem> {
    const run: ElfRunContext = {
      client: this.#client,
      settings: this.#settings,
      shaper: this.#k.shaper,
      transforms: this.#k.transforms,
      health: this.#k.health,
      log: this.#k.log,
      clock: this.#k.clock,
      state,
      cursors: new Map<string, ElfCursor>(),
      globalFields: this.#k.globalFields,
      rowsIngested: this.#k.meter.createCounter("sf2loki_eventlogfile_rows_ingested", {
        description: "EventLogFile rows shaped into entries",
      }),
    };
    while (!signal.aborted) {
      const started = this.#k.clock.monotonic();
      yield* this.#cycle(run, signal);
      this.#lastCycleSeconds = (this.#k.clock.monotonic() - started) / 1000;
      if (this.#k.once) return;
      if (!(await pause(this.#k.clock, jittered(this.#k.clock, this.#settings.poll_interval), signal)))
        return;
    }
  }

  async *#cycle(run: ElfRunContext, signal: AbortSignal): AsyncGenerator<LogEntry[]> {
    const types = await this.#resolveTypes(signal);
    if (types === undefined || types.length === 0 || signal.aborted) return;
    const nowSfMs = this.#k.clock.now() + this.#skewMs();

    const channel = new Channel<LogEntry[]>(BRIDGE_CAPACITY);
    const stop = new AbortController();
    const onAbort = (): void => {
      stop.abort(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    const permits = new Semaphore(this.#settings.concurrency);
    // Shared by the workers: set by one whose type hit REQUEST_LIMIT_EXCEEDED, read by the rest.
    let throttled = false;
    const gateClosed = (): boolean => throttled;
    const emit = (entries: LogEntry[]): Promise<void> | undefined => channel.put(entries, stop.signal);
    const worker = async (type: EventLogFileTypeSettings): Promise<void> => {
      if (gateClosed()) return;
      await permits.acquire(stop.signal);
      try {
        if (gateClosed()) return;
        const result = await processEventType(run, { nowSfMs, signal: stop.signal, emit }, type);
        if (result.throttled) throttled = true;
      } finally {
        permits.release();
      }
    };
    const all = Promise.allSettled(types.map(worker)).then((results) => {
      const failure = results.find(
        (r): r is PromiseRejectedResult => r.status === "rejected" && !stop.signal.aborted,
      );
      const reason: unknown = failure?.reason;
      channel.close(
        reason === undefined || reason instanceof Error ? reason : new Error(describeError(reason)),
      );
    });
    try {
      yield* channel;
    } finally {
      stop.abort();
      signal.removeEventListener("abort", onAbort);
      await all;
    }
    if (gateClosed())
      this.#k.log.warn("REQUEST_LIMIT_EXCEEDED: the remaining EventLogFile types wait for the next cycle");
  }

  /** Explicit types plus discovered ones; undefined when discovery was throttled (skip the cycle, #126). */
  async #resolveTypes(signal: AbortSignal): Promise<EventLogFileTypeSettings[] | undefined> {
    const explicit = this.#settings.event_types.filter((t) => t.name !== "*");
    const wildcard = this.#settings.event_types.find((t) => t.name === "*");
    if (!wildcard) return [...explicit];
    let discovered: string[];
    try {
      discovered = await this.#client.discover(this.#settings.interval, signal);
    } catch (err) {
      if (signal.aborted) return undefined;
      this.#k.health.failed("discovery", err, "EventLogFile type discovery");
      if (isThrottled(err)) {
        this.#k.log.warn(
          { explicitTypes: explicit.length },
          "EventLogFile discovery was throttled; skipping this whole cycle rather than spend more of the API budget",
        );
        return undefined;
      }
      return [...explicit];
    }
    this.#k.health.succeeded("discovery");
    const named = new Set(explicit.map((t) => t.name));
    const excluded = new Set(this.#settings.exclude);
    const added = discovered
      .filter((name) => !named.has(name) && !excluded.has(name) && !this.#ownedElsewhere(name))
      .map((name) => ({ name, structured_metadata_fields: null, labels: [], sample: wildcard.sample }));
    return [...explicit, ...added];
  }

  /** Server minus local clock, applied only beyond 30 s (spec A §7.4); warns once beyond 60 s. */
  #skewMs(): number {
    const skew = this.#client.skewMs ?? 0;
    if (Math.abs(skew) > SKEW_WARN_MS && !this.#skewWarned) {
      this.#skewWarned = true;
      this.#k.log.warn(
        { skewMs: skew },
        "Salesforce's clock and ours differ by more than 60 s; EventLogFile age checks use the server's; check NTP on this host",
      );
    }
    return Math.abs(skew) > SKEW_APPLY_MS ? skew : 0;
  }
}
