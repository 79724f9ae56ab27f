// The demo's live status line is redrawn in place with `\r`: a line wider than the terminal wraps and
// scrolls instead (#15), so it is cut to the width the terminal reports.
import assert from "node:assert/strict";
import { test } from "node:test";
import { fitToWidth } from "../../src/cli/demo-command.ts";
import { runCli } from "../../src/cli/program.ts";

test("fitToWidth keeps a short line, cuts a long one below the last column, ignores an unknown width", () => {
  assert.equal(fitToWidth("abc", 10), "abc");
  assert.equal(fitToWidth("0123456789abcdef", 10), "01234567…");
  assert.equal(fitToWidth("0123456789abcdef", 10).length, 9);
  assert.equal(fitToWidth("0123456789", undefined), "0123456789");
});

test("sf2loki demo on a 60-column terminal: every redraw of the status line fits in 59 columns", async () => {
  let stderr = "";
  const code = await runCli(["demo", "--events", "3000"], {
    stdout: () => undefined,
    stderr: (t) => (stderr += t),
    env: {},
    isTTY: true,
    columns: () => 60,
  });
  assert.equal(code, 0);
  const redraws = stderr
    .split("\r")
    .slice(1)
    .map((s) => s.split("\n")[0]!.replace("\x1b[K", ""));
  assert.ok(redraws.length > 0, "the status line was drawn");
  for (const line of redraws) assert.ok(line.length <= 59, `${line.length} columns: ${line}`);
});
