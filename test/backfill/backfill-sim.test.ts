// `sf2loki backfill` in process against the simulated org's EventLogFile API (several days, several
// types) and the Loki receiver: every row once with backfill="true", checkpoints only under the
// backfill keys of the configured store, a rerun that pushes nothing, --dry-run that pushes nothing,
// the summary equal to the receiver's counts, the TTY progress line, --objects, and flag errors.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { runCli } from "../../src/cli/program.ts";
import { backfillTarget } from "../../src/backfill/store.ts";
import { startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { FileLock } from "../../src/state/file-lock.ts";
import { cli } from "../support/cli.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const ROWS = { Report: 300, URI: 200, VisualforceRequest: 100 };
const DAYS = 3;
const TOTAL = (300 + 200 + 100) * DAYS;
const dir = tempDir("sf2loki-backfill-");
let world: DemoWorld;

/** --since four days back: inside retention and inside Loki's 7-day window (no warnings). */
const since = new Date(Date.now() - 4 * 86_400_000).toISOString().slice(0, 10);

before(async () => {
  world = await startDemoWorld({
    eventsPerTopic: 1,
    topics: ["/event/LoginEventStream"],
    polling: {
      dailyEventLogFiles: { types: ROWS, days: DAYS },
      objects: { ApiAnomalyEventStore: { records: 50 } },
    },
  });
});
after(async () => {
  await world.stop();
});

/** `state`: where the backfill's own document lives (the daemon's `<name>-state.json` + `-backfill`). */
function config(name: string): { path: string; state: string; daemonState: string } {
  const daemonState = join(dir, `${name}-state.json`);
  const state = join(dir, `${name}-state-backfill.json`);
  const c = world.config(daemonState);
  (c.sink as { loki: Record<string, unknown> }).loki.batch = { flush_interval: "50ms", max_entries: 200 };
  return { path: writeFile(dir, `${name}.yaml`, stringify(c)), state, daemonState };
}

function summary(stdout: string): Record<string, number> {
  const m = /^sf2loki backfill summary: (.*)$/m.exec(stdout);
  assert.ok(m, stdout);
  return Object.fromEntries(
    m[1]!.split(" ").flatMap((kv) => {
      const [k, v] = kv.split("=");
      return v === undefined ? [] : [[k!, Number.parseFloat(v)]];
    }),
  );
}

describe("sf2loki backfill against the simulated org", () => {
  it('delivers every row once with backfill="true", commits only backfill keys, and resumes to nothing', async () => {
    world.loki.reset();
    const { path, state, daemonState } = config("full");
    const r = await cli(["backfill", "--since", since, "--config", path]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, "", "no warnings for a 4-day window");
    for (const [key, s] of Object.entries(world.pollingStats())) {
      if (!key.startsWith("eventlogfile:")) continue;
      assert.deepEqual([s.missing, s.duplicates], [0, 0], key);
    }
    const entries = world.loki.entries({ source: "eventlogfile" });
    assert.equal(entries.length, TOTAL);
    assert.ok(entries.every((e) => e.labels.backfill === "true" && e.labels.job === "sf2loki"));
    assert.ok(entries.every((e) => e.labels.sf_org_id === world.org.orgId));
    // Rows keep their event time (label mode), all within the last four days.
    const oldest = entries.reduce((m, e) => (e.timestampNs < m ? e.timestampNs : m), entries[0]!.timestampNs);
    assert.ok(Number(oldest / 1_000_000n) > Date.now() - 4 * 86_400_000);
    const s = summary(r.stdout);
    assert.equal(s.files, 9);
    assert.equal(s.rows_pushed, world.loki.counts.accepted);
    assert.equal(s.rows_pushed, TOTAL);
    assert.equal(s.rows_dropped, 0);
    assert.equal(s.api_calls, 9);
    const bytes = entries.reduce((n, e) => n + Buffer.byteLength(e.line), 0);
    assert.equal(s.bytes_pushed, bytes);
    // The daemon's document is never written.
    assert.throws(() => readFileSync(daemonState), /ENOENT/);
    const doc = JSON.parse(readFileSync(state, "utf8")) as Record<string, string>;
    assert.deepEqual(Object.keys(doc).sort(), [
      "backfill:Daily:Report",
      "backfill:Daily:URI",
      "backfill:Daily:VisualforceRequest",
    ]);
    const report = JSON.parse(doc["backfill:Daily:Report"]!) as { done_ids: string[]; last_created: string };
    assert.deepEqual(Object.keys(report), ["done_ids", "last_created"]);
    const newest = world.org.rest.data.eventLogFiles.filter((f) => f.EventType === "Report").at(-1)!;
    assert.deepEqual(report, { done_ids: [newest.Id], last_created: newest.CreatedDate });

    const again = await cli(["backfill", "--since", since, "--config", path]);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual([summary(again.stdout).files, summary(again.stdout).rows_pushed], [0, 0]);
    assert.equal(world.loki.counts.accepted, TOTAL);
  });

  it("runs beside a live daemon: the daemon's lock and document are left alone", async () => {
    world.loki.reset();
    const { path, state, daemonState } = config("beside");
    const daemonLock = new FileLock(daemonState, { heartbeatMs: 0 });
    await daemonLock.acquire();
    try {
      const r = await cli(["backfill", "--since", since, "--event-types", "URI", "--config", path]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(summary(r.stdout).rows_pushed, 200 * DAYS);
      assert.deepEqual(Object.keys(JSON.parse(readFileSync(state, "utf8")) as object), [
        "backfill:Daily:URI",
      ]);
    } finally {
      await daemonLock.release();
    }
    assert.equal(backfillTarget("/var/lib/sf2loki/state.json"), "/var/lib/sf2loki/state-backfill.json");
    assert.equal(backfillTarget("sf2loki/state.json"), "sf2loki/state-backfill.json");
    assert.equal(backfillTarget("/a.d/state"), "/a.d/state-backfill");
  });

  it("multi-org: org labels on every entry, backfill:org=<name>:... keys, the first org resumes a legacy key", async () => {
    world.loki.reset();
    const daemonState = join(dir, "multi-state.json");
    const c = world.config(daemonState);
    c.orgs = [{ name: "prod", salesforce: c.salesforce, sources: c.sources }];
    delete c.salesforce;
    delete c.sources;
    const path = writeFile(dir, "multi.yaml", stringify(c));
    // A single-org backfill already loaded URI up to its newest file: the first org picks that up.
    const uri = world.org.rest.data.eventLogFiles.filter((f) => f.EventType === "URI");
    const newest = uri.at(-1)!;
    writeFile(
      dir,
      "multi-state-backfill.json",
      JSON.stringify({
        "backfill:Daily:URI": JSON.stringify({ done_ids: [newest.Id], last_created: newest.CreatedDate }),
      }),
    );
    const r = await cli(["backfill", "--since", since, "--event-types", "URI,Report", "--config", path]);
    assert.equal(r.code, 0, r.stderr);
    const entries = world.loki.entries({ source: "eventlogfile" });
    assert.equal(entries.length, 300 * DAYS, "Report only: URI resumed past its newest file");
    assert.ok(
      entries.every(
        (e) =>
          e.labels.org === "prod" && e.labels.sf_org_id === world.org.orgId && e.labels.backfill === "true",
      ),
    );
    const doc = JSON.parse(readFileSync(join(dir, "multi-state-backfill.json"), "utf8")) as Record<
      string,
      string
    >;
    assert.deepEqual(Object.keys(doc).sort(), ["backfill:Daily:URI", "backfill:org=prod:Daily:Report"]);
  });

  it("--dry-run lists the files and counts the rows, pushes and commits nothing", async () => {
    world.loki.reset();
    const { path, state } = config("dry");
    const r = await cli([
      "backfill",
      "--since",
      since,
      "--dry-run",
      "--event-types",
      "Report,URI",
      "--config",
      path,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(world.loki.counts.requests, 0);
    assert.equal((r.stdout.match(/^dry-run: /gm) ?? []).length, 2 * DAYS);
    assert.match(r.stdout, /^dry-run: Report 0AT\S+ created=\S+ size=\d+$/m);
    const s = summary(r.stdout);
    assert.equal(s.rows_pushed, (300 + 200) * DAYS);
    assert.match(r.stdout, /dry run: nothing pushed, nothing committed/);
    assert.throws(() => readFileSync(state), /ENOENT/);
  });

  it("on a terminal, shows the live progress line", async () => {
    const { path } = config("tty");
    let stderr = "";
    const code = await runCli(["backfill", "--since", since, "--event-types", "URI", "--config", path], {
      stdout: () => undefined,
      stderr: (t) => (stderr += t),
      env: {},
      isTTY: true,
    });
    assert.equal(code, 0, stderr);
    // Each redraw returns the cursor and clears the line: "\r" + ESC "[K".
    const draws = stderr.split("\r\u001b[K").slice(1);
    assert.ok(draws.length >= 3, stderr);
    // One redraw per file landed (the 250 ms timer may add more).
    const line = /^backfill: files (\d)\/3, rows \d+, [\d.]+\/[\d.]+ MiB, \d+ rows\/s, ETA (\d+s|\?)\n?$/;
    assert.ok(
      draws.every((d) => line.test(d)),
      JSON.stringify(draws),
    );
    assert.deepEqual(
      [1, 2, 3].map((n) => draws.some((d) => d.startsWith(`backfill: files ${n}/3`))),
      [true, true, true],
    );
    assert.match(draws.at(-1)!, /^backfill: files 3\/3, rows 600, .*\n$/);
  });

  it("--objects loads SOQL-polled event objects under backfill:objects keys; --ingest-timestamps drops the label", async () => {
    world.loki.reset();
    const { path, state } = config("objects");
    const r = await cli([
      "backfill",
      "--since",
      since,
      "--objects",
      "ApiAnomalyEventStore",
      "--ingest-timestamps",
      "--config",
      path,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const entries = world.loki.entries({ source: "eventlog_objects" });
    assert.equal(entries.length, 50);
    assert.ok(entries.every((e) => e.labels.backfill === undefined && e.metadata.event_time !== undefined));
    const doc = JSON.parse(readFileSync(state, "utf8")) as Record<string, string>;
    assert.deepEqual(Object.keys(doc), ["backfill:objects:ApiAnomalyEventStore"]);
    assert.equal(summary(r.stdout).rows_pushed, 50);
  });

  it("refuses a bad date, a bad type and a missing --since with exit 2 before any call", async () => {
    const { path } = config("bad");
    const requests = world.org.rest.stats.requests;
    for (const [args, message] of [
      [["--since", "2026-13-01"], /invalid date '2026-13-01' for --since \(expected YYYY-MM-DD\)/],
      [
        ["--since", since, "--event-types", "Report,Bad-Type"],
        /--event-types: 'Bad-Type' is not a valid name/,
      ],
      [[], /--since YYYY-MM-DD is required/],
    ] as const) {
      const r = await cli(["backfill", ...args, "--config", path]);
      assert.equal(r.code, 2);
      assert.match(r.stderr, message);
      assert.doesNotMatch(r.stderr, /\n\s+at /);
    }
    assert.equal(world.org.rest.stats.requests, requests);
  });

  it("warns when --since is past retention and past Loki's reject_old_samples_max_age", async () => {
    const { path } = config("old");
    const old = new Date(Date.now() - 40 * 86_400_000).toISOString().slice(0, 10);
    const r = await cli(["backfill", "--since", old, "--dry-run", "--event-types", "URI", "--config", path]);
    assert.equal(r.code, 0);
    assert.match(r.stderr, /sf2loki backfill: --since is 4\d days ago, past EventLogFile retention/);
    assert.match(r.stderr, /reject_old_samples_max_age .* use --ingest-timestamps/);
    const quiet = await cli([
      "backfill",
      "--since",
      old,
      "--dry-run",
      "--ingest-timestamps",
      "--event-types",
      "URI",
      "--config",
      path,
    ]);
    assert.doesNotMatch(quiet.stderr, /reject_old_samples_max_age/);
  });
});
