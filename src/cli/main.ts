#!/usr/bin/env node
// Process entry point: binds the CLI to the real process and sets the exit code.
import { runCli } from "./program.ts";

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  env: process.env,
  isTTY: process.stderr.isTTY,
});
