// The measured daemon of bench/eventlogfile-daemon.ts. Plain JavaScript on purpose: started on the
// compiled build (`dist`, what the image runs) this process loads no TypeScript at all, where a `.ts`
// entry would carry Node's type stripper and the sources' TypeScript modules (~26 MiB of RSS that no
// deployed daemon has). `src` runs the TypeScript sources instead, for a checkout without a build.
//
// Protocol over IPC, with the parent (which owns the simulated org and the receiver, and samples this
// process's RSS from /proc): the parent sends the raw config; this process builds the app and answers
// `ready` with its RSS; the parent sends `go`; this process runs one finite drain (pollOnce) and
// answers `done` with the CPU seconds of the run.
//
// Usage: node [v8 flags] bench/daemon-drain.mjs dist|src      (forked by bench/eventlogfile-daemon.ts)
import { clearInterval, setInterval } from "node:timers";

const entry = process.argv[2];
if (entry !== "dist" && entry !== "src") {
  process.stderr.write(
    "usage: node bench/daemon-drain.mjs dist|src (forked by bench/eventlogfile-daemon.ts)\n",
  );
  process.exit(2);
}
const ext = entry === "dist" ? "js" : "ts";
const root = new URL(`../${entry}/`, import.meta.url);
const [{ createApp }, { validateConfig }] = await Promise.all([
  import(new URL(`daemon/app.${ext}`, root).href),
  import(new URL(`config/load.${ext}`, root).href),
]);

/** The next IPC message from the parent. */
const next = () => new Promise((resolve) => process.once("message", resolve));

/** The JS heap in use after a full collection (the parent starts this process with --expose-gc). */
const heapLive = () => {
  globalThis.gc?.();
  return process.memoryUsage().heapUsed;
};

const app = createApp(validateConfig(await next()), { pollOnce: true, noHealthServer: true });
process.send({ phase: "ready", rss: process.memoryUsage.rss(), heap: heapLive() });
await next();
// What the RSS is made of at its worst: V8's heap (reserved and used), memory outside it that JS
// objects hold (Buffers), and the RSS; each one's peak over the run, sampled every 50 ms.
const peaks = { rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
const sampler = setInterval(() => {
  const m = process.memoryUsage();
  for (const k of Object.keys(peaks)) peaks[k] = Math.max(peaks[k], m[k]);
}, 50);
const cpu0 = process.cpuUsage();
await app.run(new AbortController().signal);
const cpu = process.cpuUsage(cpu0);
clearInterval(sampler);
process.send({ phase: "done", cpu_seconds: (cpu.user + cpu.system) / 1e6, heap: heapLive(), peaks });
process.once("disconnect", () => process.exit(0));
