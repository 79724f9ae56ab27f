// The benchmark's own arithmetic: windows, medians, spread and the baseline comparison. A wrong
// spread or verdict would make `npm run bench` call noise a regression (or hide one).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  compareWithBaseline,
  readBaseline,
  renderTable,
  writeBaseline,
  type RunFigure,
} from "../../bench/baseline.ts";
import { median, medianSample, summarise, timedWindow } from "../../bench/sample.ts";

test("median takes the middle sample, and the mean of the middle two for an even count", () => {
  assert.equal(median([5, 1, 3]), 3);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(medianSample([{ v: 9 }, { v: 1 }, { v: 5 }], (x) => x.v).v, 5);
});

test("summarise reports (max - min) / median as the spread", () => {
  const f = summarise([100_000, 110_000, 90_000, 105_000, 95_000]);
  assert.equal(f.median, 100_000);
  assert.equal(f.spread, 0.2);
  assert.equal(f.samples.length, 5);
  assert.deepEqual(summarise([0.5]), { median: 0.5, spread: 0, samples: [0.5] });
  assert.throws(() => summarise([]));
});

test("a timed window repeats passes until their timed ms reach the minimum", async () => {
  const lengths = [700, 800, 600, 900];
  let i = 0;
  const passes = await timedWindow(2000, () => ({ ms: lengths[i++]! }));
  assert.deepEqual(
    passes.map((p) => p.ms),
    [700, 800, 600],
  );
  const one = await timedWindow(2000, () => Promise.resolve({ ms: 2500 }));
  assert.equal(one.length, 1, "a pass long enough alone is a window of one");
});

const fig = (m: number, spread: number | null, better: RunFigure["better"] = "higher"): RunFigure => ({
  median: m,
  spread,
  samples: [m],
  better,
});

test("the change is median / baseline; the verdict needs a change beyond both spreads", () => {
  const baseline = {
    recorded_at: "2026-12-01T00:00:00.000Z",
    commit: "abc",
    node: "v24",
    cores: 2,
    load_avg_1m: { start: 0.5, end: 0.5 },
    figures: {
      faster: { median: 100, spread: 0.05 },
      noisy: { median: 100, spread: 0.3 },
      cpu: { median: 2, spread: 0.05 },
      rss: { median: 300, spread: null },
    },
  };
  const out = compareWithBaseline(
    {
      faster: fig(120, 0.04),
      noisy: fig(120, 0.04),
      cpu: fig(2.5, 0.02, "lower"),
      rss: fig(290, null, "lower"),
      fresh: fig(1, 0.1),
    },
    baseline,
  );
  assert.equal(out.faster!.change, 1.2);
  assert.equal(out.faster!.verdict, "better");
  assert.equal(out.noisy!.verdict, "within spread", "the baseline's own 30 % spread covers a 20 % change");
  assert.equal(out.cpu!.verdict, "worse", "more CPU per entry is worse");
  assert.equal(out.rss!.verdict, "better");
  assert.equal(out.fresh!.verdict, "new");
  assert.equal(out.fresh!.baseline, null);
  const quick = compareWithBaseline({ faster: fig(120, 0.04), fresh: fig(1, 0.1) }, baseline, false);
  assert.equal(quick.faster!.verdict, "not judged", "a --quick run is not judged against a full baseline");
  assert.equal(quick.faster!.change, 1.2);
  assert.equal(quick.fresh!.verdict, "new");
  const table = renderTable(out);
  assert.match(table, /^faster \(↑\)\s+120\s+4\.0%\s+100\s+1\.200x\s+better$/m);
  assert.match(table, /^cpu \(↓\)\s+2\.5\s+2\.0%\s+2\s+1\.250x\s+worse$/m);
});

test("the baseline file round-trips; a missing one is no baseline, a broken one says how to fix it", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "sf2loki-bench-"));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const path = join(dir, "baseline.json");
  assert.equal(readBaseline(path), undefined);
  writeBaseline(
    { e2e_eps: fig(250_000, 0.08) },
    { node: "v24", cores: 2, load_avg_1m: { start: 1, end: 1 } },
    path,
  );
  const back = readBaseline(path);
  assert.ok(back);
  assert.deepEqual(back.figures, { e2e_eps: { median: 250_000, spread: 0.08 } });
  assert.equal(back.cores, 2);
  assert.match(readFileSync(path, "utf8"), /"recorded_at": "\d{4}-/);
  writeFileSync(path, "{ not json");
  assert.throws(() => readBaseline(path), /--update-baseline/);
});
