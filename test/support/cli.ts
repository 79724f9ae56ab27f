// Runs the CLI in-process with captured output, the way a user would see it.
import { runCli } from "../../src/cli/program.ts";

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function cli(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    env,
    isTTY: false,
  });
  return { code, stdout, stderr };
}
