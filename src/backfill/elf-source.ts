// The backfill's EventLogFile source: for each type in turn, every pending file (listing.ts) is
// downloaded with bounded concurrency but handed on strictly in file order, shaped by the daemon's
// own ElfFileShaper (transforms, per-type labels and structured metadata, sampling). Every row of a
// file carries the cursor from before the file and its last row the advanced one, so a kill at any
// moment replays at most the file in flight. Types run one after another for the same reason.
import { describeError } from "../errors.ts";
import type { CheckpointToken, LogEntry } from "../model.ts";
import type { EventLogFileClient } from "../salesforce/eventlogfile/client.ts";
import type { ListedFile } from "../salesforce/eventlogfile/listing.ts";
import { Channel } from "../sources/eventlogfile/channel.ts";
import { ElfFileShaper, type ElfShapeOptions } from "../sources/eventlogfile/shape.ts";
import type { EventLogFileTypeSettings } from "../sources/eventlogfile/settings.ts";
import type { CheckpointReader, Source, SourceItem } from "../sources/source.ts";
import { advance, parseCursor, serialiseCursor, type BackfillCursor } from "./checkpoint.ts";
import type { BackfillContext } from "./context.ts";
import { pendingFiles } from "./listing.ts";

/**
 * Row batches (at most 64 KiB of CSV each) a prefetched file may hold before its download waits: as small
 * as the daemon's bridge; measured with bench/backfill.ts, 16 cost ~15 % more CPU per row for no gain.
 */
const PREFETCH_BATCHES = 2;

interface Fetch {
  file: ListedFile;
  rows: Channel<LogEntry[]>;
  done: Promise<{ bytes: number }>;
  /** Body bytes received so far (the progress line's ETA moves within a large file). */
  bytes: () => number;
}

export class BackfillElfSource implements Source {
  readonly name = "eventlogfile" as const;
  readonly #c: BackfillContext;
  readonly #client: EventLogFileClient;
  readonly #types: readonly EventLogFileTypeSettings[];

  constructor(c: BackfillContext, client: EventLogFileClient, types: readonly EventLogFileTypeSettings[]) {
    this.#c = c;
    this.#client = client;
    this.#types = types;
  }

  async *events(state: CheckpointReader, signal: AbortSignal): AsyncGenerator<SourceItem> {
    for (const type of this.#types) {
      if (signal.aborted) return;
      // One run per batch of rows, as in the daemon's source.
      yield* this.#type(type, state, signal);
    }
  }

  async *#type(
    type: EventLogFileTypeSettings,
    state: CheckpointReader,
    signal: AbortSignal,
  ): AsyncGenerator<LogEntry[]> {
    const c = this.#c;
    const { key, value } = await c.keys.load(state, type.name);
    const cursor = parseCursor(value, c.log, key);
    let files: ListedFile[];
    try {
      const listed = await pendingFiles(
        this.#client,
        {
          eventType: type.name,
          interval: c.plan.interval,
          cursor,
          sinceMs: c.plan.sinceMs,
          untilMs: c.plan.untilMs,
          pageSize: c.elf.page_size,
        },
        signal,
      );
      files = listed.files;
      c.stats.listCalls += listed.calls;
    } catch (err) {
      if (signal.aborted) throw err;
      c.report(`${type.name}: listing failed (${describeError(err)}); skipping this type, rerun to retry it`);
      c.stats.failedTypes++;
      return;
    }
    c.progress.plan(
      files.length,
      files.reduce((n, f) => n + f.logFileLength, 0),
    );
    c.onListed?.(type.name, files);
    // Each file's cursor before and after it: files are pushed in this order, so the chain is fixed.
    const chain: BackfillCursor[] = [cursor];
    for (const f of files) chain.push(advance(chain.at(-1)!, f.id, f.createdDate));

    const stop = new AbortController();
    const onAbort = (): void => {
      stop.abort(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    const window: Fetch[] = [];
    let next = 0;
    const fill = (): void => {
      while (window.length < c.plan.concurrency && next < files.length) {
        const i = next++;
        window.push(this.#prefetch(type, key, files[i]!, chain[i]!, chain[i + 1]!, stop.signal));
      }
    };
    try {
      fill();
      while (window.length > 0) {
        const head = window[0]!;
        try {
          for await (const batch of head.rows) {
            if (c.decorate.ingestTimestamps) for (const e of batch) c.decorate.stampIngest(e);
            c.progress.rows(batch.length, head.bytes());
            yield batch;
          }
          const { bytes } = await head.done;
          c.stats.files++;
          c.progress.fileDone(bytes);
        } catch (err) {
          if (signal.aborted) throw err;
          c.report(
            `${type.name}: file ${head.file.id} (${head.file.createdDate}) failed (${describeError(err)}); ` +
              `this type stops here, rerun to resume from it`,
          );
          c.stats.failedTypes++;
          return;
        }
        window.shift();
        fill();
      }
    } finally {
      stop.abort();
      signal.removeEventListener("abort", onAbort);
      await Promise.allSettled(window.map((f) => f.done));
    }
  }

  #prefetch(
    type: EventLogFileTypeSettings,
    key: string,
    file: ListedFile,
    pre: BackfillCursor,
    adv: BackfillCursor,
    signal: AbortSignal,
  ): Fetch {
    const c = this.#c;
    const rows = new Channel<LogEntry[]>(PREFETCH_BATCHES);
    const preToken: CheckpointToken = { key, value: serialiseCursor(pre) };
    const advToken: CheckpointToken = { key, value: serialiseCursor(adv) };
    const options: ElfShapeOptions = {
      type,
      fields: type.structured_metadata_fields ?? c.globalFields,
      timestampColumn: c.elf.timestamp_column,
      transforms: c.transforms,
      shaper: c.shaper,
    };
    const put = async (entries: LogEntry[]): Promise<void> => {
      const wait = rows.put(entries, signal);
      if (wait) await wait;
    };
    let received = (): number => 0;
    const done = (async () => {
      c.stats.downloads++;
      const opened = await this.#client.open(file, signal);
      received = () => opened.bytes;
      try {
        let shape: ElfFileShaper | undefined;
        // One entry is held back: only the file's last row may carry the advanced cursor.
        let held: LogEntry | undefined;
        for await (const batch of opened.rows) {
          shape ??= new ElfFileShaper(batch.header, options);
          const out: LogEntry[] = [];
          for (const cells of batch.rows) {
            const entry = shape.entry(cells, file.createdNs, preToken);
            if (!entry) continue;
            c.decorate.labels(entry);
            if (held) out.push(held);
            held = entry;
          }
          if (out.length > 0) await put(out);
        }
        if (held) {
          held.checkpoint = advToken;
          await put([held]);
        }
        return { bytes: opened.bytes };
      } finally {
        opened.close();
      }
    })();
    done.then(
      () => {
        rows.close();
      },
      (err: unknown) => {
        rows.close(err instanceof Error ? err : new Error(describeError(err)));
      },
    );
    return { file, rows, done, bytes: () => received() };
  }
}
