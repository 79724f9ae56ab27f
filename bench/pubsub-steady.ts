// A steady Pub/Sub stream through the whole daemon: `sf2loki --config` (bin/sf2loki.js, so with its V8
// flags) subscribed to three topics of the simulated org, which publishes `rate` events/s spread over
// them, shipping to a Loki receiver. The org and the receiver run in their own child processes; the
// daemon's RSS is sampled from /proc every second and its CPU read from /proc/<pid>/stat at the end.
// What it shows: a streaming daemon's memory stays flat (issue #15's bar: RSS < 150 MiB after 60 s at
// 5 000 events/s over 3 topics) and what it costs in CPU.
//
// Usage: node bench/pubsub-steady.ts [seconds=60] [rate=5000] [--dist]    one JSON line on stdout
//   --dist: run the compiled build (`npm run build` first) with the daemon's V8 flags and environment, as the image
//           does; without it, bin/sf2loki.js on the TypeScript sources (+~30 MiB of type stripping).
import { vmMib } from "./measure.ts";
import { forkRole, readBody } from "./roles.ts";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { answeredUnlessPush } from "./empty-lookups.ts";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { DAEMON_ENV, DAEMON_V8_FLAGS } from "../src/v8-flags.ts";

const HERE = fileURLToPath(import.meta.url);
const DIST = process.argv.includes("--dist");
/** bin/sf2loki.js sets DAEMON_ENV when it re-execs; a --dist run starts the daemon as that re-exec would. */
const ENV = DIST ? { ...process.env, ...DAEMON_ENV } : process.env;
const ENTRY = DIST
  ? [...DAEMON_V8_FLAGS, new URL("../dist/cli/main.js", import.meta.url).pathname]
  : [new URL("../bin/sf2loki.js", import.meta.url).pathname];
const SECRET = "bench-secret";
const TOPICS = ["/event/LoginEventStream", "/event/ApiEventStream", "/event/LightningUriEventStream"];
const TICK_MS = 100;

/** The org: three empty topics, then `rate` events/s published in 100 ms ticks, round-robin. */
async function serveOrg(rate: number): Promise<void> {
  const { startSimOrg } = await import("../src/sim/salesforce/index.ts");
  const { simSalesforceConfig } = await import("../src/sim/demo-polling.ts");
  const org = await startSimOrg({ clientSecret: SECRET, topics: TOPICS, eventsPerTopic: 0, seed: 5 });
  let published = 0;
  let due = 0;
  const ticker = setInterval(() => {
    due += (rate * TICK_MS) / 1000;
    const now = Math.floor(due) - published;
    for (let i = 0; i < TOPICS.length; i++) {
      const n = Math.floor(now / TOPICS.length) + (i < now % TOPICS.length ? 1 : 0);
      if (n > 0) org.faults.publish(TOPICS[i]!, n);
    }
    published += now;
  }, TICK_MS);
  process.on("message", () => process.send?.({ published }));
  process.send?.({ salesforce: simSalesforceConfig(org, SECRET), pubsubEndpoint: org.pubsubEndpoint });
  process.once("disconnect", () => {
    clearInterval(ticker);
    void org.stop().then(() => process.exit(0));
  });
}

/** A Loki push endpoint that decodes every body and counts entries. */
async function serveReceiver(): Promise<void> {
  const { decodePushBody } = await import("../src/sim/loki-decode.ts");
  let entries = 0;
  const server = createServer((req, res) => {
    if (answeredUnlessPush(req, res)) return;
    void readBody(req).then((body) => {
      const streams = decodePushBody(
        body,
        req.headers["content-type"],
        req.headers["content-encoding"],
        64 * 2 ** 20,
      );
      for (const s of streams) entries += s.entries.length;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  process.on("message", () => process.send?.({ entries }));
  process.send?.({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/loki/api/v1/push` });
  process.once("disconnect", () => {
    server.close();
    process.exit(0);
  });
}

async function ask<T>(proc: ChildProcess): Promise<T> {
  const reply = new Promise<T>((resolve) =>
    proc.once("message", (m) => {
      resolve(m as T);
    }),
  );
  proc.send("stats");
  return reply;
}

/** utime + stime of a process in seconds (clock ticks of 100 Hz, the Linux default). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function main(seconds: number, rate: number): Promise<void> {
  const org = await forkRole(HERE, ["--org", String(rate)]);
  const receiver = await forkRole(HERE, ["--receiver"]);
  const { salesforce, pubsubEndpoint } = org.ready as { salesforce: unknown; pubsubEndpoint: string };
  const { url } = receiver.ready as { url: string };
  const dir = mkdtempSync(join(tmpdir(), "sf2loki-bench-"));
  const config = join(dir, "config.yaml");
  writeFileSync(
    config,
    stringify({
      salesforce,
      sources: { pubsub: { endpoint: pubsubEndpoint, insecure: true, topics: TOPICS } },
      sink: { loki: { url } },
      state: { file: { path: join(dir, "state.json") } },
      service: { health_addr: "127.0.0.1:0" },
    }),
  );
  const daemon = spawn(process.execPath, [...ENTRY, "--config", config], {
    stdio: ["ignore", "ignore", "inherit"],
    env: ENV,
  });
  try {
    const rss: number[] = [];
    for (let s = 1; s <= seconds; s++) {
      await delay(1000);
      if (daemon.exitCode !== null) throw new Error(`the daemon exited with ${daemon.exitCode}`);
      rss.push(vmMib(daemon.pid!, "VmRSS"));
    }
    const cpu = cpuSeconds(daemon.pid!);
    const peak = vmMib(daemon.pid!, "VmHWM");
    const { published } = await ask<{ published: number }>(org.proc);
    const { entries } = await ask<{ entries: number }>(receiver.proc);
    const every10 = rss.filter((_, i) => (i + 1) % 10 === 0);
    console.log(
      JSON.stringify({
        bench: "pubsub_steady",
        entry: DIST ? "dist" : "bin (TypeScript sources)",
        seconds,
        rate_eps: rate,
        topics: TOPICS.length,
        published,
        delivered: entries,
        delivered_eps: Math.round(entries / seconds),
        rss_end_mib: rss.at(-1),
        rss_mib_every_10s: every10,
        peak_rss_mib: peak,
        cpu_seconds: Math.round(cpu * 100) / 100,
        cpu_over_wall: Math.round((cpu / seconds) * 100) / 100,
        load_avg_1m: Math.round(loadavg()[0]! * 100) / 100,
      }),
    );
  } finally {
    daemon.kill("SIGKILL");
    org.proc.disconnect();
    receiver.proc.disconnect();
    rmSync(dir, { recursive: true, force: true });
  }
}

const [flag, arg] = process.argv.slice(2).filter((a) => a !== "--dist");
if (flag === "--org") await serveOrg(Number(arg));
else if (flag === "--receiver") await serveReceiver();
else await main(Number(flag ?? 60), Number(arg ?? 5000));
