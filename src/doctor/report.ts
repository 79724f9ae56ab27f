// How doctor's rows reach the operator: a padded table and a count line, or one JSON line (the
// schema is in docs/cli.md), and the exit code the rows imply.
import type { CheckRow } from "./check.ts";

export interface DoctorReport {
  checks: CheckRow[];
  exit_code: number;
}

export function renderTable(rows: readonly CheckRow[]): string {
  const widths = [4, 6];
  for (const r of rows) {
    widths[0] = Math.max(widths[0]!, r.name.length);
    widths[1] = Math.max(widths[1]!, r.status.length);
  }
  const line = (a: string, b: string, c: string): string =>
    `${a.padEnd(widths[0]!)}  ${b.padEnd(widths[1]!)}  ${c}`.trimEnd();
  const out = [line("name", "status", "detail"), ...rows.map((r) => line(r.name, r.status, r.detail))];
  return `${out.join("\n")}\n\n${countLine(rows)}\n`;
}

export function countLine(rows: readonly CheckRow[]): string {
  const n = (s: CheckRow["status"]): number => rows.filter((r) => r.status === s).length;
  return `${n("PASS")} passed, ${n("WARN")} warnings, ${n("FAIL")} failed, ${n("SKIP")} skipped`;
}

export function renderJson(report: DoctorReport): string {
  return JSON.stringify(report) + "\n";
}
