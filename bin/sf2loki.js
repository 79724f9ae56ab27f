#!/usr/bin/env node
// In a source checkout, run the TypeScript directly (Node >= 22.18 strips types), so `npx sf2loki`
// never runs a stale build; an installed package has no src/ and runs the compiled dist/.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const src = new URL("../src/cli/main.ts", import.meta.url);
const inCheckout = existsSync(src) && !import.meta.url.includes("/node_modules/");

// An older Node would fail below with a loader stack (ERR_UNKNOWN_FILE_EXTENSION on a .ts file): say
// in one line what was found, what is needed and how to get it. Plain JavaScript that Node 18 parses.
const engines = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).engines.node;
const atLeast = (version, min) => {
  const [a, b] = version.split(".").map(Number);
  const [x, y] = min.split(".").map(Number);
  return a > x || (a === x && b >= y);
};
const needed = engines.replace(/^>=\s*/, "");
const strips = typeof process.features?.typescript === "string"; // type stripping on (22.18+, 23.6+)
if (!atLeast(process.versions.node, needed) || (inCheckout && !strips)) {
  const why =
    inCheckout && atLeast(process.versions.node, needed)
      ? " with type stripping (22.18+) to run the sources"
      : "";
  process.stderr.write(
    `sf2loki: Node ${process.versions.node} found at ${process.execPath}; sf2loki needs Node ${engines}${why} ` +
      `(package.json engines): run \`source scripts/use-node.sh\` in a checkout, or install a newer Node\n`,
  );
  process.exit(2);
}
const from = (path) => new URL(inCheckout ? `../src/${path}.ts` : `../dist/${path}.js`, import.meta.url).href;

// The daemon's V8 flags and C-library environment (src/v8-flags.ts, docs/capacity.md) size its memory;
// they only take effect when the process starts, so this process replaces itself (same pid, no parent
// left behind) with one that has them. Skipped when the operator set them all (either V8 flag, and
// MALLOC_ARENA_MAX), SF2LOKI_V8_FLAGS=0, or on a Node without process.execve.
const { missingDaemonEnv, missingV8Flags } = await import(from("v8-flags"));
const missing = missingV8Flags(process.execArgv, process.env);
const env = missingDaemonEnv(process.env);
if ((missing.length > 0 || Object.keys(env).length > 0) && typeof process.execve === "function") {
  const self = fileURLToPath(import.meta.url);
  process.execve(
    process.execPath,
    [process.execPath, ...missing, ...process.execArgv, self, ...process.argv.slice(2)],
    { ...process.env, ...env },
  );
}
await import(from("cli/main"));
