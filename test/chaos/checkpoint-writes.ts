// What the HA chaos runs check of the checkpoint writes a rig recorded: nothing moves backwards, no write
// of an older term lands after a newer term began, and (for the plain file's one window) a stale document
// that does land is replaced whole by the next write.
import assert from "node:assert/strict";

export interface CheckpointWrite {
  /** The replica that wrote it, where the rig can tell. */
  by?: string;
  doc: Record<string, string>;
  /** Set when the stored bytes were not a JSON document (a torn write). */
  problem?: string;
}

export function parseCheckpoints(bytes: Buffer | string, by?: string): CheckpointWrite {
  try {
    return { ...(by !== undefined && { by }), doc: JSON.parse(bytes.toString()) as Record<string, string> };
  } catch (err) {
    return { ...(by !== undefined && { by }), doc: {}, problem: String(err) };
  }
}

function replayId(value: string): bigint {
  const bytes = Buffer.from(value, "base64");
  assert.equal(bytes.length, 8, `replay id ${value} is not 8 bytes`);
  return bytes.readBigUInt64BE();
}

/** Every `pubsub:<topic>` replay id, and the file store's `__fence_epoch__`, only ever moves forward. */
export function assertNoCheckpointRegression(writes: readonly CheckpointWrite[]): void {
  assert.ok(writes.length > 0, "no checkpoint write was recorded");
  assert.deepEqual(
    writes.flatMap((w) => w.problem ?? []),
    [],
    "unreadable checkpoint documents",
  );
  const high = new Map<string, { value: bigint; at: number }>();
  writes.forEach((w, i) => {
    for (const [key, raw] of Object.entries(w.doc)) {
      let value: bigint;
      if (key.startsWith("pubsub:")) value = replayId(raw);
      else if (key === "__fence_epoch__") value = BigInt(raw);
      else continue;
      const before = high.get(key);
      if (before && value < before.value) {
        assert.fail(
          `checkpoint ${key} moved backwards at write #${i} (by ${w.by ?? "?"}): ` +
            `${before.value} (write #${before.at}) -> ${value}`,
        );
      }
      high.set(key, { value, at: i });
    }
  });
}

/**
 * Every write carries its writer's term (`__fence_epoch__`): once a term's first write has landed, no
 * write of an older term may land after it (#17: no fenced replica writes into the next term).
 */
export function assertNoStaleTermWrite(writes: readonly CheckpointWrite[]): void {
  let newest = -1;
  writes.forEach((w, i) => {
    const raw = w.doc["__fence_epoch__"];
    assert.ok(raw !== undefined, `write #${i} (by ${w.by ?? "?"}) carries no term: ${JSON.stringify(w.doc)}`);
    const epoch = Number(raw);
    assert.ok(
      epoch >= newest,
      `write #${i} (by ${w.by ?? "?"}) of term ${epoch} landed after term ${newest} began`,
    );
    newest = epoch;
  });
}

/**
 * The state file's one window (docs/high-availability.md, "Faults nobody names"): a leader paused
 * between its last fence check and its rename can land one document of its term after the next term
 * began. The file store's next write of the newer term replaces that document whole. This returns the
 * writes without such stale documents, after checking there is at most one, that it is not the last
 * write, and that the write after it is of the newer term: assertNoCheckpointRegression on what is left
 * then fails if the newer term built on the stale document instead of replacing it.
 */
export function withoutReplacedStaleWrite(writes: readonly CheckpointWrite[]): CheckpointWrite[] {
  const kept: CheckpointWrite[] = [];
  const stale: number[] = [];
  let newest = -1;
  writes.forEach((w, i) => {
    const epoch = Number(w.doc["__fence_epoch__"] ?? Number.NaN);
    if (epoch < newest) {
      stale.push(i);
      return;
    }
    if (epoch > newest) newest = epoch;
    kept.push(w);
  });
  assert.ok(
    stale.length <= 1,
    `${stale.length} writes of an older term landed (#${stale.join(", #")}); at most one may`,
  );
  for (const i of stale) {
    const after = writes[i + 1];
    assert.ok(after !== undefined, `the stale write #${i} is the last one: nothing replaced it`);
    assert.equal(after.doc["__fence_epoch__"], String(newest), `write #${i + 1} after the stale write #${i}`);
  }
  return kept;
}
