// The daemon's resident memory once started, per config: `sf2loki --config` as a child process against
// the simulated world of `sf2loki demo` (three Pub/Sub topics, the simulated Loki), with the file store,
// and with the S3 store (the S3 emulator of the tests). RSS is the kernel's VmRSS of the child, sampled
// every 100 ms for `seconds`; VmHWM is its peak. What it shows: the baseline the memory model of
// docs/capacity.md adds to the data path, and that a config loads only the SDKs it names.
//
// Usage: node bench/startup-rss.ts [seconds=8] [--dist]     one JSON line on stdout
//   --dist: run the compiled build (`npm run build` first) with the daemon's V8 flags and environment, as the image
//           does; without it, bin/sf2loki.js on the TypeScript sources (+~30 MiB of type stripping).
// `idle_file_store` is the baseline of docs/capacity.md: an EventLogFile source with nothing to fetch.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { stringify } from "yaml";
import { startDemoWorld } from "../src/sim/demo-world.ts";
import { DAEMON_ENV, DAEMON_V8_FLAGS } from "../src/v8-flags.ts";
import { S3Emulator } from "../test/support/s3-emulator.ts";
import { vmMib } from "./measure.ts";

const DIST = process.argv.includes("--dist");
/** bin/sf2loki.js sets DAEMON_ENV when it re-execs; a --dist run starts the daemon as that re-exec would. */
const ENV = DIST ? { ...process.env, ...DAEMON_ENV } : process.env;
const ENTRY = DIST
  ? [...DAEMON_V8_FLAGS, new URL("../dist/cli/main.js", import.meta.url).pathname]
  : [new URL("../bin/sf2loki.js", import.meta.url).pathname];

interface StartupFigures {
  /** VmRSS at 1 s, 2 s, ... after spawn. */
  rss_mib_by_second: number[];
  /** VmHWM at the end: the peak. */
  peak_rss_mib: number;
  rss_end_mib: number;
}

async function measure(
  config: Record<string, unknown>,
  seconds: number,
  env: Record<string, string>,
): Promise<StartupFigures> {
  const dir = mkdtempSync(join(tmpdir(), "sf2loki-startup-"));
  const file = join(dir, "config.yaml");
  writeFileSync(file, stringify(config));
  const child = spawn(process.execPath, [...ENTRY, "--config", file], {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...ENV, ...env },
  });
  try {
    const bySecond: number[] = [];
    for (let s = 1; s <= seconds; s++) {
      await delay(1000);
      if (child.exitCode !== null) throw new Error(`the daemon exited with ${child.exitCode}`);
      bySecond.push(vmMib(child.pid!, "VmRSS"));
    }
    return {
      rss_mib_by_second: bySecond,
      peak_rss_mib: vmMib(child.pid!, "VmHWM"),
      rss_end_mib: bySecond.at(-1) ?? 0,
    };
  } finally {
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

const seconds = Number(process.argv.slice(2).find((a) => !a.startsWith("--")) ?? 8);
const world = await startDemoWorld({ eventsPerTopic: 2000 });
const s3 = new S3Emulator({ buckets: ["state-bucket"] });
const s3Url = await s3.start();
try {
  const health = { service: { health_addr: "127.0.0.1:0" } };
  const demo = { ...world.config(join(mkdtempSync(join(tmpdir(), "sf2loki-st-")), "state.json")), ...health };
  const onS3 = {
    ...demo,
    state: { store: "s3", s3: { bucket: "state-bucket", key: "sf2loki/state.json", endpoint_url: s3Url } },
  };
  const s3Env = {
    AWS_ACCESS_KEY_ID: "test",
    AWS_SECRET_ACCESS_KEY: "test",
    AWS_EC2_METADATA_DISABLED: "true",
  };
  const idle = { ...demo, sources: { eventlogfile: { enabled: true, event_types: ["Report"] } } };
  const results = {
    idle_file_store: await measure(idle, seconds, {}),
    demo_file_store: await measure(demo, seconds, {}),
    demo_s3_store: await measure(onS3, seconds, s3Env),
  };
  console.log(
    JSON.stringify({
      bench: "startup_rss",
      node: process.version,
      entry: DIST ? "dist" : "bin (TypeScript sources)",
      load_avg: loadavg().map((l) => Math.round(l * 100) / 100),
      // Flat for bench/run.ts (top-level numeric fields): `idle_file_store_rss_end_mib`, ...
      ...Object.fromEntries(
        Object.entries(results).flatMap(([name, r]) => [
          [`${name}_rss_end_mib`, r.rss_end_mib],
          [`${name}_peak_rss_mib`, r.peak_rss_mib],
        ]),
      ),
      results,
    }),
  );
} finally {
  await world.stop();
  await s3.close();
}
