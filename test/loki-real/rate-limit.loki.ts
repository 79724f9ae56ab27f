// A tenant whose ingestion limit is far below what the daemon has to ship (#26): the real Loki answers
// 429 to every request larger than the tenant's burst, forever. The sink reads the limit Loki names,
// splits below it and paces to it; judged by LogQL: every entry once, and the rate achieved near the
// tenant's limit. The same over OTLP into Loki's /otlp/v1/logs (#28), which limits as its push API does.
import assert from "node:assert/strict";
import { test } from "node:test";
import { pino } from "pino";
import { LogEntry } from "../../src/model.ts";
import { Pipeline } from "../../src/pipeline/pipeline.ts";
import { DEFAULT_BATCH_SETTINGS } from "../../src/pipeline/settings.ts";
import type { Logger } from "../../src/obs/logger.ts";
import { createLokiSink } from "../../src/sinks/loki/sink.ts";
import type { Sink } from "../../src/sinks/sink.ts";
import { lokiBytesOf } from "../../src/sinks/receiving-loki/tenant-pacer.ts";
import { MemoryStore, ScriptedSource } from "../support/fakes.ts";
import { otlpSinkTo } from "./support/otlp-sink.ts";
import { nowNs, protobufSinkSettings, realLokiForFile } from "./support/real-loki.ts";

const shared = realLokiForFile();
const missing = shared.missing;

const LIMIT = 262_144; // ingestion_rate_mb: 0.25
const BURST = 524_288; // ingestion_burst_size_mb: 0.5

type Wire = "loki" | "otlp";

/** A sink of `wire` into the shared Loki as `tenant`, logging to `logger`. */
function sinkOf(wire: Wire, tenant: string, logger: Logger): Sink & { close(): Promise<void> } {
  if (wire === "loki") {
    return createLokiSink(protobufSinkSettings(shared.loki.pushUrl, tenant), { logger });
  }
  return otlpSinkTo(shared.loki.url, tenant, {}, { logger });
}

for (const wire of ["loki", "otlp"] as const) {
  test(
    `${wire}: a tenant limited to 0.25 MB/s (burst 0.5 MB): every row lands once, at the tenant's rate, with a WARN naming it`,
    { skip: missing },
    async (t) => {
      const tenant = `slow-${wire}`;
      await shared.loki.setLimits({ [tenant]: { ingestion_rate_mb: 0.25, ingestion_burst_size_mb: 0.5 } });
      // EventLogFile-shaped rows of ~740 bytes: a batch of 1 000 is 740 KB, above the burst.
      const n = 6000;
      const base = nowNs() - 3_600_000_000_000n;
      const rows = Array.from(
        { length: n },
        (_, i) =>
          new LogEntry({
            timestampNs: base + BigInt(i) * 1_000_000n,
            labels: { job: "sf2loki", source: "eventlogfile", event_type: "API" },
            line: `{"REQUEST_ID":"rate-${i}","pad":"${"x".repeat(700)}"}`,
            checkpoint: { key: "eventlogfile:API", value: String(i + 1) },
          }),
      );
      const bytes = lokiBytesOf(rows);
      const warns: { msg: string }[] = [];
      const logger = pino({ level: "warn" }, { write: (l: string) => warns.push(JSON.parse(l) as never) });
      const sink = sinkOf(wire, tenant, logger);
      t.after(() => sink.close());
      const store = new MemoryStore();
      const started = performance.now();
      await new Pipeline({
        sources: [new ScriptedSource("eventlogfile", rows)],
        sink,
        store,
        logger,
        batch: { ...DEFAULT_BATCH_SETTINGS, max_entries: 1000, flush_interval_ms: 50 },
      }).run(new AbortController().signal);
      const seconds = (performance.now() - started) / 1000;

      const reader = shared.loki.reader(tenant);
      const end = nowNs() + 60_000_000_000n;
      const selector = wire === "loki" ? '{event_type="API"}' : '{service_name="sf2loki"} | event_type="API"';
      assert.equal(await reader.count(selector, base - 1n, end), n, "count_over_time: each row once");
      assert.equal((await reader.entries(selector, base - 1n, end)).length, n, "each row stored");
      assert.equal(store.doc.get("eventlogfile:API"), String(n));
      // The first second rides the tenant's burst; the rest is the limit's.
      const achieved = (bytes - BURST) / seconds;
      t.diagnostic(
        `${wire}, rate-limited tenant: ${bytes} line+metadata bytes in ${seconds.toFixed(1)} s, ` +
          `${Math.round(achieved)} bytes/s after the burst against a limit of ${LIMIT} ` +
          `(${((achieved / LIMIT) * 100).toFixed(0)} %)`,
      );
      if (wire === "loki") {
        assert.ok(Math.abs(achieved - LIMIT) <= 0.2 * LIMIT, `achieved ${Math.round(achieved)} bytes/s`);
      } else {
        // Loki counts an OTLP record's resource and its own fields too, so fewer of our bytes fit the
        // limit; the pacer learns that ratio from the 429. Under the limit, and not starved.
        assert.ok(
          achieved <= 1.2 * LIMIT && achieved >= 0.3 * LIMIT,
          `achieved ${Math.round(achieved)} bytes/s`,
        );
      }
      const named = warns.filter((w) =>
        new RegExp(`rate-limiting tenant '${tenant}' at its ingestion limit of 262144`).test(w.msg),
      );
      assert.ok(named.length >= 1, `a WARN naming the limit: ${JSON.stringify(warns.map((w) => w.msg))}`);
      assert.ok(
        warns.every((w) => !/reachable|credentials/.test(w.msg)),
        "no WARN blames the network or the credentials",
      );
    },
  );
}
