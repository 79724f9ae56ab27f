// A source whose entries leave carrying who their user is (`enrich.users`): wraps any source, reads
// the user id off each line and attaches what the org's UserDirectory knows, without waiting for it.
import type { LogEntry } from "../../model.ts";
import {
  isRun,
  type CheckpointReader,
  type Source,
  type SourceItem,
  type SourceName,
} from "../../sources/source.ts";
import type { UserDirectory } from "./directory.ts";
import { userId18, userIdOfLine } from "./user-id.ts";

/**
 * An ApexLog's line is its body; its record's fields (LogUserId among them) travel as structured
 * metadata, as routed fields may: those are read first, the line after.
 */
function userIdOf(entry: LogEntry): string | undefined {
  const md = entry.structuredMetadata;
  const own = md.UserId ?? md.USER_ID ?? md.LogUserId;
  return own !== undefined ? userId18(own) : userIdOfLine(entry.line);
}

export class UserEnrichedSource implements Source {
  readonly #inner: Source;
  readonly #users: UserDirectory;

  constructor(inner: Source, users: UserDirectory) {
    this.#inner = inner;
    this.#users = users;
  }

  get name(): SourceName {
    return this.#inner.name;
  }

  async settled(): Promise<void> {
    await this.#inner.settled?.();
  }

  async *events(state: CheckpointReader, signal: AbortSignal): AsyncGenerator<SourceItem, void, undefined> {
    const release = this.#users.open();
    let first = true;
    try {
      for await (const item of this.#inner.events(state, signal)) {
        if (first) {
          // The inner source connected and produced meanwhile; this waits only for what is left.
          await this.#users.ready(signal);
          first = false;
        }
        if (isRun(item)) for (const entry of item) this.#enrich(entry);
        else this.#enrich(item);
        yield item;
      }
    } finally {
      release();
    }
  }

  /** Before admission, so the metadata's size is measured with the user fields in it. */
  #enrich(entry: LogEntry): void {
    if (entry.checkpointOnly) return;
    const id = userIdOf(entry);
    if (id === undefined) return;
    const fields = this.#users.fieldsOf(id);
    if (fields === undefined) return;
    const own = entry.structuredMetadata;
    // The entry's own fields win: a configured `Username` routed from the payload stays as sent.
    entry.structuredMetadata = { ...fields, ...own };
  }
}
