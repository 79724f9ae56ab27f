#!/usr/bin/env node
// Process entry point: binds the CLI to the real process and sets the exit code.
import { runCli } from "./program.ts";

// `sf2loki config example | head` closes the pipe early; that is the reader's choice, not a crash.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw err;
  });
}

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  env: process.env,
  isTTY: process.stderr.isTTY,
  columns: () => process.stderr.columns,
});

// Whatever is still open now was abandoned on purpose: a request stuck on a silently dead connection
// that its client library cannot abort (GCS) waits for the kernel, up to ~15 minutes. It must not keep a
// stopped daemon alive past its shutdown; an idle process has already exited before this fires.
setTimeout(() => {
  process.exit();
}, 1000).unref();
