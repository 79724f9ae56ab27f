// The chaos runs' checks of recorded checkpoint writes, on hand-made histories: each must catch what it
// names, and the plain file's one allowance must not hide a newer term that built on a stale document.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  assertNoCheckpointRegression,
  assertNoStaleTermWrite,
  withoutReplacedStaleWrite,
  type CheckpointWrite,
} from "./checkpoint-writes.ts";

function replay(n: number): string {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64BE(BigInt(n));
  return bytes.toString("base64");
}

function write(epoch: number, a: number, b: number): CheckpointWrite {
  return {
    doc: { "pubsub:/event/A": replay(a), "pubsub:/event/B": replay(b), __fence_epoch__: String(epoch) },
  };
}

test("a replay id that moves backwards, or an older term after a newer one, is reported", () => {
  assert.throws(() => {
    assertNoCheckpointRegression([write(1, 10, 10), write(1, 9, 11)]);
  }, /pubsub:\/event\/A moved backwards at write #1/);
  assert.throws(() => {
    assertNoStaleTermWrite([write(1, 1, 1), write(2, 2, 2), write(1, 3, 3)]);
  }, /term 1 landed after term 2/);
  assertNoCheckpointRegression([write(1, 1, 1), write(2, 2, 2), write(2, 3, 3)]);
});

test("the file's stale document is dropped when the newer term's next write replaces it whole", () => {
  const history = [write(1, 100, 100), write(2, 200, 200), write(1, 150, 150), write(2, 210, 200)];
  const kept = withoutReplacedStaleWrite(history);
  assert.deepEqual(kept, [history[0], history[1], history[3]]);
  assertNoCheckpointRegression(kept);
  assertNoStaleTermWrite(kept);
});

test("a newer term that built on the stale document is still caught: its untouched keys went back", () => {
  // The stale write set B to 150; the next epoch-2 write moved only A on and kept B at 150.
  const history = [write(1, 100, 100), write(2, 200, 200), write(1, 150, 150), write(2, 210, 150)];
  assert.throws(() => {
    assertNoCheckpointRegression(withoutReplacedStaleWrite(history));
  }, /pubsub:\/event\/B moved backwards/);
});

test("more than one stale document, or one that nothing replaced, is reported", () => {
  assert.throws(
    () =>
      withoutReplacedStaleWrite([
        write(2, 2, 2),
        write(1, 1, 1),
        write(2, 3, 3),
        write(1, 1, 1),
        write(2, 4, 4),
      ]),
    /2 writes of an older term landed/,
  );
  assert.throws(() => withoutReplacedStaleWrite([write(2, 2, 2), write(1, 1, 1)]), /nothing replaced it/);
});
