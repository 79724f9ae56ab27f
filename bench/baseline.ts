// bench/baseline.json holds the figures of the last accepted full run. bench/run.ts prints every figure
// of a run beside its baseline with the change (run ÷ baseline) and whether that change is larger than
// the noise both runs measured; `node bench/run.ts --update-baseline` makes the run just finished the
// new baseline (commit the file with the change that earned it).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const BASELINE_PATH = fileURLToPath(new URL("./baseline.json", import.meta.url));

/** Which way is good: entries/s and ratios up, CPU per entry and RSS down. */
export type Better = "higher" | "lower";

/** One figure as a run reports it; `spread` is null for a single measurement (peak RSS). */
export interface RunFigure {
  median: number;
  spread: number | null;
  samples: number[];
  better: Better;
}

export interface BaselineFigure {
  median: number;
  spread: number | null;
}

export interface Baseline {
  recorded_at: string;
  commit: string | null;
  node: string;
  cores: number;
  load_avg_1m: { start: number; end: number };
  figures: Record<string, BaselineFigure>;
}

/** The run's figure beside the baseline's. */
export interface ComparedFigure extends RunFigure {
  baseline: number | null;
  /** median ÷ baseline; null without a baseline for this figure. */
  change: number | null;
  /**
   * `better` / `worse` when the change is larger than the bigger of the two spreads (so noise alone
   * is unlikely to explain it), `within spread` otherwise, `new` without a baseline, `not judged`
   * for a `--quick` run (fewer entries and shorter windows than the full run the baseline holds).
   */
  verdict: "better" | "worse" | "within spread" | "new" | "not judged";
}

/** The recorded baseline, or undefined if there is none yet (a fresh clone before the first record). */
export function readBaseline(path = BASELINE_PATH): Baseline | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  try {
    return JSON.parse(text) as Baseline;
  } catch (err) {
    throw new Error(
      `${path} is not valid JSON (${String(err)}); restore it from git or record a new one with ` +
        `node bench/run.ts --update-baseline`,
      { cause: err },
    );
  }
}

function headCommit(): string | null {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch {
    return null;
  }
}

export function writeBaseline(
  figures: Record<string, RunFigure>,
  context: Omit<Baseline, "figures" | "recorded_at" | "commit">,
  path = BASELINE_PATH,
): void {
  const baseline: Baseline = {
    recorded_at: new Date().toISOString(),
    commit: headCommit(),
    ...context,
    figures: Object.fromEntries(
      Object.entries(figures).map(([name, f]) => [name, { median: f.median, spread: f.spread }]),
    ),
  };
  writeFileSync(path, JSON.stringify(baseline, null, 2) + "\n");
}

function verdictOf(
  f: RunFigure,
  base: BaselineFigure | undefined,
  change: number | null,
): ComparedFigure["verdict"] {
  if (base === undefined || change === null) return "new";
  const noise = Math.max(f.spread ?? 0, base.spread ?? 0);
  if (Math.abs(change - 1) <= noise) return "within spread";
  return change > 1 === (f.better === "higher") ? "better" : "worse";
}

/** `judge` false (a `--quick` run) still shows the baseline and the change, without a verdict. */
export function compareWithBaseline(
  figures: Record<string, RunFigure>,
  baseline: Baseline | undefined,
  judge = true,
): Record<string, ComparedFigure> {
  const out: Record<string, ComparedFigure> = {};
  for (const [name, f] of Object.entries(figures)) {
    const base = baseline?.figures[name];
    const change = base && base.median !== 0 ? Math.round((f.median / base.median) * 1000) / 1000 : null;
    const verdict = judge || base === undefined ? verdictOf(f, base, change) : "not judged";
    out[name] = { ...f, baseline: base?.median ?? null, change, verdict };
  }
  return out;
}

const pct = (x: number | null): string => (x === null ? "-" : `${(x * 100).toFixed(1)}%`);

/** A fixed-width table for the terminal: figure, median, spread, baseline, change, verdict. */
export function renderTable(compared: Record<string, ComparedFigure>): string {
  const rows = [["figure", "median", "spread", "baseline", "change", "verdict"]];
  for (const [name, f] of Object.entries(compared)) {
    rows.push([
      `${name} (${f.better === "higher" ? "↑" : "↓"})`,
      String(f.median),
      pct(f.spread),
      f.baseline === null ? "-" : String(f.baseline),
      f.change === null ? "-" : `${f.change.toFixed(3)}x`,
      f.verdict,
    ]);
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return (
    rows
      .map((r) =>
        r
          .map((cell, c) => cell.padEnd(widths[c]!))
          .join("  ")
          .trimEnd(),
      )
      .join("\n") + "\n"
  );
}
