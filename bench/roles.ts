// A bench script plays several roles (the measured daemon, the simulated org, the receiver), each in
// its own process so the measured one's CPU and RSS are its own: the helpers forked in a role and the
// request body reading their receivers share.
import { fork, type ChildProcess } from "node:child_process";
import type { IncomingMessage } from "node:http";

/** Forks `script` with `args` (its role) and waits for the first message it sends (its address). */
export async function forkRole(
  script: string,
  args: string[],
): Promise<{ proc: ChildProcess; ready: unknown }> {
  // execArgv: [] keeps the measured process's V8 flags off the helpers.
  const proc = fork(script, args, { execArgv: [], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const ready = await new Promise<unknown>((resolve, reject) => {
    proc.once("message", resolve);
    proc.once("error", reject);
    proc.once("exit", (code) => {
      reject(new Error(`bench helper ${args.join(" ")} exited with ${code}`));
    });
  });
  return { proc, ready };
}

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}
