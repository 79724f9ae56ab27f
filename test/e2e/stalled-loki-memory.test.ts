// Memory is bounded by construction: with Loki accepting nothing (every push held open), a daemon whose
// sources all have far more data than its bounds fills its lanes to their byte budgets, stops pulling,
// and its RSS stays under the memory model of docs/capacity.md (src/capacity.ts). The daemon is a
// child process (bin/sf2loki.js, so it runs with its V8 flags), so the RSS measured is its own.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { stringify } from "yaml";
import { memoryModel } from "../../src/capacity.ts";
import { validateConfig } from "../../src/config/load.ts";
import type { PipelineStatus } from "../../src/pipeline/pipeline.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { waitFor } from "../support/daemon.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const BIN = new URL("../../bin/sf2loki.js", import.meta.url).pathname;
const QUEUE_MAX_BYTES = 16 * 2 ** 20;

function rssMib(pid: number, field: "VmRSS" | "VmHWM"): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : 0;
}

test("Loki stalled, every source producing: the lanes fill to their budgets and RSS stays under the model", async (t) => {
  // ~110 MiB of ELF rows and ~24 MiB of Pub/Sub events: several times what the lanes may hold.
  const world = await startDemoWorld({
    seed: 3,
    eventsPerTopic: 8_000,
    polling: { eventLogFiles: { URI: { rows: 150_000 } } },
  });
  t.after(() => world.stop());
  world.loki.faults.stall();
  t.after(() => {
    world.loki.faults.release();
  });

  const dir = tempDir();
  const tree = world.config(join(dir, "state.json")) as { sink: { loki: Record<string, unknown> } };
  tree.sink.loki.batch = { queue_max_bytes: QUEUE_MAX_BYTES, queue_maxsize: 1_000_000 };
  const config = { ...tree, service: { health_addr: "127.0.0.1:0", shutdown_grace: "1s" } };
  const model = memoryModel(validateConfig(config), { fromSource: true });

  const daemon = spawn(process.execPath, [BIN, "--config", writeFile(dir, "c.yaml", stringify(config))], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  t.after(() => daemon.kill("SIGKILL"));
  let stdout = "";
  let stderr = "";
  daemon.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  daemon.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  await waitFor(() => /"health server listening"/.test(stdout) || daemon.exitCode !== null, 15_000, "health");
  assert.equal(daemon.exitCode, null, stderr.slice(-2000));
  const url = /health server listening"[^\n]*"url": ?"(http:\/\/[^"]+)"/.exec(stdout)?.[1];
  assert.ok(url, `the daemon logs its health URL: ${stdout.slice(0, 3000)}`);

  let lanes: PipelineStatus["lanes"] = {};
  let peakRss = 0;
  const sample = setInterval(() => {
    if (daemon.exitCode === null) peakRss = Math.max(peakRss, rssMib(daemon.pid!, "VmRSS"));
  }, 50);
  t.after(() => {
    clearInterval(sample);
  });
  const full = (name: "bulk" | "streaming"): boolean =>
    (lanes[name]?.queued_bytes ?? 0) >= QUEUE_MAX_BYTES * 0.95;
  const poll = setInterval(() => {
    fetch(`${url}/statusz`)
      .then((r) => r.json() as Promise<{ pipeline: PipelineStatus }>)
      .then((s) => (lanes = s.pipeline.lanes))
      .catch(() => undefined);
  }, 100);
  t.after(() => {
    clearInterval(poll);
  });
  await waitFor(
    () => (full("bulk") && full("streaming")) || daemon.exitCode !== null,
    20_000,
    "both lanes full",
  );
  assert.equal(daemon.exitCode, null, stderr.slice(-2000));
  // Held full for a while: nothing more may be admitted, so nothing more may be retained.
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const hwm = rssMib(daemon.pid!, "VmHWM");
  clearInterval(sample);

  for (const name of ["bulk", "streaming"] as const) {
    const lane = lanes[name]!;
    assert.ok(lane.queued_bytes <= QUEUE_MAX_BYTES + 300_000, `${name}: ${lane.queued_bytes} bytes queued`);
    assert.ok(lane.in_flight >= 1, `${name}: pushes held by the stalled Loki`);
  }
  assert.equal(world.loki.counts.accepted, 0, "the stalled Loki accepted nothing");
  const detail = `peak RSS ${hwm.toFixed(1)} MiB (sampled ${peakRss.toFixed(1)}), model ${JSON.stringify(model)}`;
  t.diagnostic(detail);
  assert.ok(hwm < model.total_mib, detail);
});
