// Exactly once in a real Loki (#27), judged only by LogQL: the scenario that lost 2 000 events and
// counted 851 twice (three kill -9 of the daemon mid-stream, each restarted on the same checkpoint),
// a sparse stream's failed push retried after later batches landed, and Loki's read path refused.
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { stringify } from "yaml";
import { LogEntry } from "../../src/model.ts";
import { Pipeline } from "../../src/pipeline/pipeline.ts";
import { DEFAULT_RECONCILE } from "../../src/pipeline/reconcile.ts";
import { DEFAULT_BATCH_SETTINGS } from "../../src/pipeline/settings.ts";
import { startDemoWorld, DEMO_TOPICS, type DemoWorld } from "../../src/sim/demo-world.ts";
import { createLokiSink, type LokiSink } from "../../src/sinks/loki/sink.ts";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, openSync } from "node:fs";
import { tmpdir } from "node:os";
import { MemoryStore, ScriptedSource } from "../support/fakes.ts";
import { tempDir, writeFile } from "../support/tmp.ts";
import { faultProxy } from "./support/fault-proxy.ts";
import { nowNs, protobufSinkSettings, realLokiForFile, type LokiReader } from "./support/real-loki.ts";

const shared = realLokiForFile();
const missing = shared.missing;
const RUNS = Number(process.env.LOKI_REAL_RUNS ?? "3");
const DAY_NS = 86_400_000_000_000n;
const HOUR_NS = 3_600_000_000_000n;
const SLICE_NS = 600_000_000_000n;
const BIN = new URL("../../bin/sf2loki.js", import.meta.url).pathname;
/** The daemons' logs, kept after the run for a failure's diagnosis. */
const LOG_DIR = process.env.LOKI_REAL_LOGS ?? join(tmpdir(), "sf2loki-loki-real-logs");
mkdirSync(LOG_DIR, { recursive: true });

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
  return port;
}

/** A backlog one event a second this long is dated within Loki's 3 h ingester horizon. */
const BACKLOG_IN_HORIZON = 10_000;

interface Resume {
  flushed?: boolean;
  state: string;
  queries: number;
  seconds: number;
  entries_checked: number;
  entries_skipped: number;
}

async function resumeOf(port: number): Promise<Resume | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/statusz`);
    const body = (await res.json()) as { pipeline?: { resumes?: Record<string, Resume> } };
    return body.pipeline?.resumes?.[""];
  } catch {
    return undefined;
  }
}

/** Entries the daemon holds (queued, batching, pushing, awaiting commit), or -1 if it does not answer. */
async function pendingOf(port: number): Promise<number> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/statusz`);
    const body = (await res.json()) as { pipeline?: { lanes?: Record<string, Record<string, number>> } };
    let n = 0;
    for (const lane of Object.values(body.pipeline?.lanes ?? {}))
      n +=
        (lane.queued_entries ?? 0) +
        (lane.batching_entries ?? 0) +
        (lane.in_flight ?? 0) +
        (lane.awaiting_commit ?? 0);
    return n;
  } catch {
    return -1;
  }
}

/**
 * Per event type over the last week: every stored copy (metric query) and distinct entries (log
 * query). The backlogs here are dated within the 3 h in which Loki's queriers ask its ingesters, so
 * they need no flush (after a /flush, a fresh Loki's log queries missed up to a fifth of the entries
 * its metric queries counted, for as long as we watched: 7 923 of 10 000).
 */
const tally = readTally;

async function readTally(
  reader: LokiReader,
  hours = 4n,
): Promise<Record<string, { counted: number; distinct: number }>> {
  const end = nowNs() + 60_000_000_000n;
  const start = end - hours * HOUR_NS;
  const counts = await reader.countBy('{source="pubsub"}', start, end, ["event_type"]);
  const out: Record<string, { counted: number; distinct: number }> = {};
  for (const topic of DEMO_TOPICS) {
    const name = topic.split("/").pop()!;
    // Ten-minute slices, each under one page: a paginated 4 h log query lost whole batches here.
    let distinct = 0;
    for (let from = start; from < end; from += SLICE_NS) {
      const to = from + SLICE_NS < end ? from + SLICE_NS : end;
      distinct += (await reader.entries(`{source="pubsub", event_type="${name}"}`, from, to)).length;
    }
    out[name] = { counted: counts.get(name) ?? 0, distinct };
  }
  return out;
}

/**
 * Where a copy is: the seconds holding more than one entry of a topic (the backlog is one event a
 * second), each with its age at the time of asking.
 */
async function copiesOf(
  reader: LokiReader,
  hours: bigint,
): Promise<{ type: string; ageS: number; n: number }[]> {
  const end = nowNs();
  const out: { type: string; ageS: number; n: number }[] = [];
  for (let from = end - hours * HOUR_NS; from < end; from += HOUR_NS) {
    const to = from + HOUR_NS;
    const series = await reader.matrix(
      'sum by (event_type) (count_over_time({source="pubsub"}[1s]))',
      from,
      to,
      1,
    );
    for (const s of series)
      for (const [t, n] of s.values)
        if (n > 1) out.push({ type: s.metric.event_type ?? "", ageS: Math.round(Date.now() / 1000 - t), n });
  }
  return out;
}

interface CrashOutcome {
  seen: Record<string, { counted: number; distinct: number }>;
  resumes: (Resume | undefined)[];
  world: DemoWorld;
}

/**
 * The scenario: the simulated org's three topics, `events` each (a backlog one second apart,
 * the newest now), one daemon with a file store killed with kill -9 three times (after 3.0, 2.5 and
 * 2.5 s), each time restarted on the same checkpoint 4 s later; the fourth run finishes.
 */
async function crashScenario(
  t: TestContext,
  tenant: string,
  seed: number,
  events: number,
  linesPerSecond = 0,
  flush = false,
  managed = false,
): Promise<CrashOutcome> {
  // A limit that does not make this case about 429s (#26 has its own): the default 4 MB/s would.
  await shared.loki.setLimits({ [tenant]: { ingestion_rate_mb: 64, ingestion_burst_size_mb: 128 } });
  const world = await startDemoWorld({ seed, eventsPerTopic: events, managed });
  t.after(() => world.stop());
  const dir = tempDir();
  const port = await freePort();
  const tree = world.config(join(dir, "state.json")) as {
    sink: { loki: Record<string, unknown> };
    service: Record<string, unknown>;
  };
  tree.sink.loki = {
    ...tree.sink.loki,
    url: shared.loki.pushUrl,
    tenant_id: tenant,
    egress: { max_lines_per_second: linesPerSecond },
    // Past Loki's 3 h ingester horizon a lookup sees only what was flushed (#35).
    ...(flush ? { reconcile: { flush_url: `${shared.loki.url}/flush` } } : {}),
  };
  tree.service = { ...tree.service, health_addr: `127.0.0.1:${port}` };
  const config = writeFile(dir, "c.yaml", stringify(tree));
  const resumes: (Resume | undefined)[] = [];
  let life = 0;
  const spawnLogged = (): ChildProcess => {
    const log = openSync(join(LOG_DIR, `${tenant}-${++life}.log`), "w");
    return spawn(process.execPath, [BIN, "--config", config], { stdio: ["ignore", log, log] });
  };
  for (const lifeMs of [3000, 2500, 2500]) {
    const daemon = spawnLogged();
    t.after(() => daemon.kill("SIGKILL"));
    await delay(lifeMs);
    resumes.push(await resumeOf(port));
    daemon.kill("SIGKILL");
    await once(daemon, "exit");
    await delay(4000);
  }
  const last = spawnLogged();
  t.after(() => last.kill("SIGKILL"));
  // Done when the daemon has held nothing for 3 s. Loki is not polled meanwhile: a /flush while a
  // stream is still written to made a later count disagree with the log query by one entry.
  let idleFor = 0;
  const deadline = Date.now() + 120_000;
  while (idleFor < 3 && Date.now() < deadline) {
    await delay(1000);
    idleFor = (await pendingOf(port)) === 0 ? idleFor + 1 : 0;
  }
  resumes.push(await resumeOf(port));
  // Pending 0 also on a daemon that does not answer: read the state the judge relies on.
  assert.ok((await pendingOf(port)) === 0, "the last run drained");
  last.kill("SIGTERM");
  await once(last, "exit");
  // A backlog dated past Loki's 3 h ingester horizon is read from the store: flush it there first.
  const hours = BigInt(Math.ceil(events / 3600) + 1);
  if (events > BACKLOG_IN_HORIZON) await shared.loki.flush();
  const seen = await tally(shared.loki.reader(tenant), hours);
  const copied = Object.values(seen).some((s) => s.counted !== s.distinct);
  if (copied) t.diagnostic(`copies: ${JSON.stringify(await copiesOf(shared.loki.reader(tenant), hours))}`);
  t.diagnostic(
    `resumes [queries, seconds, checked, skipped]: ${JSON.stringify(resumes.map((r) => r && [r.queries, r.seconds, r.entries_checked, r.entries_skipped]))}; ` +
      `per topic: ${JSON.stringify(seen)}`,
  );
  return { seen, resumes, world };
}

// 8 000 a topic: a backlog of 2.2 h, inside the 3 h within which Loki's queriers ask its ingesters,
// so a restart's lookups (and the judge) see everything its predecessors pushed. Entries dated
// earlier are invisible to every query until Loki flushes their chunk (docs/high-availability.md).
const EVENTS = 8000;
for (let run = 1; run <= RUNS; run++) {
  test(
    `three kill -9 mid-stream, each restarted on the same checkpoint: every topic 8 000 distinct and counted exactly 8 000 (run ${run}/${RUNS})`,
    { skip: missing, timeout: 300_000 },
    async (t) => {
      // 3 000 lines/s: the 24 000 events take ~8 s, so every kill lands mid-stream.
      const { seen, resumes } = await crashScenario(t, `crash-${run}`, 100 + run, EVENTS, 3000);
      for (const [name, s] of Object.entries(seen)) {
        assert.deepEqual(s, { counted: EVENTS, distinct: EVENTS }, `${name}: ${JSON.stringify(s)}`);
      }
      // What the restarts found already stored is reported (the diagnostic), not asserted: how much a
      // kill leaves pushed and uncommitted depends on timing; test/pipeline pins the mechanism.
      t.diagnostic(`skipped per restart: ${resumes.map((r) => r?.entries_skipped ?? "?").join(", ")}`);
    },
  );
}

// Managed subscriptions (#36): the same three kills, but Salesforce keeps the replay and each restart
// resumes where sf2loki last committed it there (after Loki accepted); what the killed run pushed and
// had not committed is re-delivered, and looked up in Loki before it is pushed again.
test(
  "managed subscriptions: three kill -9 mid-stream, each restarted: every topic 8 000 distinct and counted exactly 8 000, and committed on Salesforce to the last event",
  { skip: missing, timeout: 300_000 },
  async (t) => {
    const { seen, resumes, world } = await crashScenario(t, "crash-managed", 131, EVENTS, 3000, false, true);
    for (const [name, s] of Object.entries(seen)) {
      assert.deepEqual(s, { counted: EVENTS, distinct: EVENTS }, `${name}: ${JSON.stringify(s)}`);
    }
    const { managed, topics, subscribeCalls, managedSubscribeCalls } = world.org.stats();
    assert.equal(subscribeCalls, 0, "every topic streamed through ManagedSubscribe");
    assert.ok(
      managedSubscribeCalls >= 4 * DEMO_TOPICS.length,
      `${managedSubscribeCalls} ManagedSubscribe calls`,
    );
    for (const m of managed)
      assert.equal(
        m.committed,
        topics[m.topic]!.maxReplayId,
        `${m.developerName} committed to the last event`,
      );
    t.diagnostic(
      `managed: ${JSON.stringify(managed.map((m) => [m.developerName, m.commits, m.refusedCommits]))}; ` +
        `skipped per restart: ${resumes.map((r) => r?.entries_skipped ?? "?").join(", ")}`,
    );
  },
);

// 20 000 a topic (#35): a 5.5 h backlog, so the first restarts resume past Loki's 3 h ingester horizon,
// where a lookup sees nothing that is not flushed and Loki's own dedup let one re-send in 60 000
// through. With sink.loki.reconcile.flush_url, each such resume flushes the ingester first.
const BACKLOG_EVENTS = 20_000;
const BACKLOG_RUNS = Number(process.env.LOKI_REAL_BACKLOG_RUNS ?? "2");
for (let run = 1; run <= BACKLOG_RUNS; run++) {
  test(
    `three kill -9 in a 5.5 h backlog, flushing the ingester before looking past its horizon: every topic 20 000 distinct and counted exactly 20 000 (run ${run}/${BACKLOG_RUNS})`,
    { skip: missing, timeout: 300_000 },
    async (t) => {
      const { seen, resumes } = await crashScenario(
        t,
        `backlog-${run}`,
        200 + run,
        BACKLOG_EVENTS,
        3000,
        true,
      );
      for (const [name, s] of Object.entries(seen)) {
        assert.deepEqual(
          s,
          { counted: BACKLOG_EVENTS, distinct: BACKLOG_EVENTS },
          `${name}: ${JSON.stringify(s)}`,
        );
      }
      t.diagnostic(`flushed per restart: ${resumes.map((r) => r?.flushed ?? false).join(", ")}`);
    },
  );
}

test(
  "a lookup reads Loki's horizon from its /config, and sees entries dated past it only once they are flushed",
  { skip: missing },
  async (t) => {
    const tenant = "horizon";
    const sink = createLokiSink(
      protobufSinkSettings(shared.loki.pushUrl, tenant, {
        reconcile: { enabled: true, flush_url: `${shared.loki.url}/flush` },
      }),
    );
    t.after(() => sink.close());
    const lookup = sink.lookup;
    assert.ok(lookup);
    const signal = new AbortController().signal;
    assert.deepEqual(await lookup.horizon(signal), { ms: 3 * 3_600_000, source: "config" });
    const at = (hoursBack: number, i: number): LogEntry =>
      new LogEntry({
        timestampNs: nowNs() - BigInt(hoursBack * 3600 - i) * 1_000_000_000n,
        labels: { job: "sf2loki", source: "pubsub", event_type: `Horizon${hoursBack}h` },
        line: `{"EventIdentifier":"h-${hoursBack}-${i}"}`,
        checkpoint: { key: `pubsub:/event/Horizon${hoursBack}h`, value: String(i + 1) },
      });
    const old = Array.from({ length: 50 }, (_, i) => at(4, i));
    const recent = Array.from({ length: 50 }, (_, i) => at(2, i));
    await sink.push(old);
    await sink.push(recent);
    assert.equal((await lookup.stored(recent, signal)).stored.size, 50, "inside the horizon: seen");
    assert.equal((await lookup.stored(old, signal)).stored.size, 0, "4 h back, unflushed: invisible");
    await lookup.flush!(signal);
    assert.equal((await lookup.stored(old, signal)).stored.size, 50, "flushed: seen");
  },
);

/** Event i of a sparse stream: one a minute, the newest a minute ago. */
function sparse(i: number, n: number, tag: string): LogEntry {
  return new LogEntry({
    timestampNs: (BigInt(Date.now() - (n - i) * 60_000) / 1000n) * 1000n * 1_000_000n,
    labels: { job: "sf2loki", source: "pubsub", event_type: "Sparse", run: tag },
    line: `{"EventIdentifier":"sparse-${tag}-${i}"}`,
    checkpoint: { key: "pubsub:/event/Sparse", value: String(i + 1) },
  });
}

/** A protobuf sink with reconcile on, pushing to (and looking up through) the fault proxy as `tenant`. */
function proxiedSink(t: TestContext, proxyUrl: string, tenant: string): LokiSink {
  const sink = createLokiSink(
    protobufSinkSettings(`${proxyUrl}/loki/api/v1/push`, tenant, { reconcile: { enabled: true } }),
  );
  t.after(() => sink.close());
  return sink;
}

test(
  "a sparse stream's failed push is retried after its later batches landed: nothing lost, nothing twice",
  { skip: missing },
  async (t) => {
    const tenant = "sparse";
    const proxy = await faultProxy(t, shared.loki.url);
    proxy.failPushes = 6; // every attempt of the first push (5 in the sink), and its first pipeline retry
    const n = 600; // six batches, each spanning 99 minutes: more than Loki's hour
    const items = Array.from({ length: n }, (_, i) => sparse(i, n, "a"));
    const sink = proxiedSink(t, proxy.url, tenant);
    const store = new MemoryStore();
    await new Pipeline({
      sources: [new ScriptedSource("pubsub", items)],
      sink,
      lookup: sink.lookup!,
      reconcile: DEFAULT_RECONCILE,
      store,
      batch: { ...DEFAULT_BATCH_SETTINGS, max_entries: 100, flush_interval_ms: 50 },
    }).run(new AbortController().signal);
    const reader = shared.loki.reader(tenant);
    await shared.loki.flush();
    const start = nowNs() - DAY_NS;
    const end = nowNs() + 60_000_000_000n;
    assert.equal(await reader.count('{event_type="Sparse"}', start, end), n);
    assert.equal((await reader.entries('{event_type="Sparse"}', start, end)).length, n);
    assert.equal(store.doc.get("pubsub:/event/Sparse"), String(n));
  },
);

test(
  "Loki's read path refused: delivery goes on, nothing lost, the copies bounded by what was pushed before",
  { skip: missing },
  async (t) => {
    const tenant = "readless";
    const proxy = await faultProxy(t, shared.loki.url);
    proxy.refuseQueries = true;
    const n = 3000;
    const items = Array.from(
      { length: n },
      (_, i) =>
        new LogEntry({
          timestampNs: BigInt(Date.now() - (n - i) * 1000) * 1_000_000n,
          labels: { job: "sf2loki", source: "pubsub", event_type: "Readless" },
          line: `{"EventIdentifier":"readless-${i}"}`,
          checkpoint: { key: "pubsub:/event/Readless", value: String(i + 1) },
        }),
    );
    const sink = proxiedSink(t, proxy.url, tenant);
    // The previous run pushed the first 1 200 and died before committing.
    for (let i = 0; i < 1200; i += 100) await sink.push(items.slice(i, i + 100));
    const pipeline = new Pipeline({
      sources: [new ScriptedSource("pubsub", items)],
      sink,
      lookup: sink.lookup!,
      reconcile: DEFAULT_RECONCILE,
      store: new MemoryStore(),
      batch: { ...DEFAULT_BATCH_SETTINGS, max_entries: 100, flush_interval_ms: 50 },
    });
    await pipeline.run(new AbortController().signal);
    const reader = shared.loki.reader(tenant);
    const start = nowNs() - DAY_NS;
    const end = nowNs() + 60_000_000_000n;
    assert.equal((await reader.entries('{event_type="Readless"}', start, end)).length, n, "nothing lost");
    const counted = await reader.count('{event_type="Readless"}', start, end);
    assert.ok(counted >= n && counted <= n + 1200, `copies bounded by the 1 200 pushed before: ${counted}`);
    assert.equal(pipeline.status().resumes[""]?.state, "degraded");
    assert.ok(proxy.queries > 0 && proxy.queries <= DEFAULT_BATCH_SETTINGS.max_in_flight);
    t.diagnostic(
      `counted ${counted} for ${n} distinct (Loki itself dropped ${n + 1200 - counted} identical copies)`,
    );
  },
);
