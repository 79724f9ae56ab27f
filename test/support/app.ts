// An app run in-process on a loopback health port, stopped at the end of the test, and a poller that
// records what its health endpoints answer (the tests assert on what an orchestrator would have seen).
import type { TestContext } from "node:test";
import { createApp, type App } from "../../src/daemon/app.ts";
import { validateConfig } from "../../src/config/load.ts";

export interface RunningApp {
  app: App;
  stop: AbortController;
  /** "running" until run() settles: then "exited", or the error it rejected with. */
  outcome: () => unknown;
  run: Promise<void>;
}

export function runApp(t: TestContext, tree: unknown): RunningApp {
  const app = createApp(validateConfig(tree), { healthAddr: "127.0.0.1:0" });
  const stop = new AbortController();
  let outcome: unknown = "running";
  const run = app.run(stop.signal).then(
    () => void (outcome = "exited"),
    (err: unknown) => void (outcome = err),
  );
  t.after(async () => {
    stop.abort();
    await run;
  });
  return { app, stop, outcome: () => outcome, run };
}

/** Every `everyMs`, GETs `path` and hands `seen` the answer as `<status> <body>`; stopped after `t`. */
export function pollHealth(
  t: TestContext,
  app: App,
  path: string,
  everyMs: number,
  seen: (answer: string) => void,
): void {
  const poll = setInterval(() => {
    const url = app.healthUrl();
    if (url === undefined) return;
    void fetch(url + path)
      .then(async (r) => {
        seen(`${r.status} ${await r.text()}`);
      })
      .catch(() => undefined);
  }, everyMs);
  t.after(() => {
    clearInterval(poll);
  });
}
