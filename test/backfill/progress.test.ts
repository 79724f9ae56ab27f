// The backfill's progress text on a manual clock: files, rows, MiB, rate and an ETA that moves inside
// a large file; a terminal gets the line rewritten in place, a log gets one line per tick.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { BackfillProgress } from "../../src/backfill/progress.ts";
import { ManualClock } from "../../src/util/clock.ts";

const MIB = 1024 * 1024;

describe("backfill progress", () => {
  it("reports rate and an ETA from the bytes received so far, also within one file", () => {
    const clock = new ManualClock();
    const progress = new BackfillProgress({ clock, write: () => undefined, tty: false });
    progress.plan(2, 4 * MIB);
    clock.advance(2_000);
    progress.rows(4_000, 1 * MIB);
    assert.equal(progress.line(), "backfill: files 0/2, rows 4000, 1.0/4.0 MiB, 2000 rows/s, ETA 6s");
    progress.fileDone(2 * MIB);
    clock.advance(2_000);
    progress.rows(4_000, 1 * MIB);
    assert.equal(progress.line(), "backfill: files 1/2, rows 8000, 3.0/4.0 MiB, 2000 rows/s, ETA 1s");
  });

  it("writes one log line per tick off a terminal, and redraws in place on one", () => {
    const clock = new ManualClock();
    let log = "";
    const plain = new BackfillProgress({ clock, write: (t) => (log += t), tty: false });
    plain.plan(1, MIB);
    plain.fileDone(MIB); // a log is not written per file
    assert.equal(log, "");
    plain.tick();
    assert.equal(log, "sf2loki backfill: files 1/1, rows 0, 1.0/1.0 MiB, 0 rows/s, ETA 0s\n");

    let term = "";
    const tty = new BackfillProgress({ clock, write: (t) => (term += t), tty: true });
    tty.plan(1, MIB);
    tty.fileDone(MIB);
    tty.stop();
    assert.equal(term.split("\r\u001b[K").length, 3, JSON.stringify(term));
    assert.ok(term.endsWith("files 1/1, rows 0, 1.0/1.0 MiB, 0 rows/s, ETA 0s\n"));
  });
});
