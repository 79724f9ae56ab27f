// `sf2loki doctor` end to end against the simulated org and Loki receiver (in process, real sockets):
// the happy path, Loki refusing the credentials, an S3 bucket denying writes, a bad config, and the
// --json output validated against the schema documented in docs/cli.md.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { z } from "zod";
import { credentialHint } from "../../src/doctor/checks/object-probe.ts";
import { startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { startLokiReceiver } from "../../src/sim/loki.ts";
import { FileLock } from "../../src/state/file-lock.ts";
import { cli } from "../support/cli.ts";
import { GcsEmulator } from "../support/gcs-emulator.ts";
import { S3Emulator } from "../support/s3-emulator.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

let world: DemoWorld;
const dir = tempDir("sf2loki-doctor-");

before(async () => {
  world = await startDemoWorld({
    eventsPerTopic: 10,
    polling: {
      objects: { ApiAnomalyEventStore: { records: 5 } },
      dailyEventLogFiles: { types: { Report: 10, URI: 10 }, days: 2 },
      apexLogs: 3,
      traceFlags: 1,
    },
  });
});
after(async () => {
  await world.stop();
});

function configFile(name: string, patch: (c: Record<string, unknown>) => void = () => undefined): string {
  const config = world.config(join(dir, `${name}-state.json`));
  patch(config);
  return writeFile(dir, `${name}.yaml`, stringify(config));
}

interface Row {
  name: string;
  status: string;
  detail: string;
}

function rowsOf(stdout: string): Row[] {
  return (JSON.parse(stdout) as { checks: Row[] }).checks;
}

/** The schema docs/cli.md documents, transcribed: the doc's JSON block must parse to the same thing. */
const reportSchema = z.strictObject({
  checks: z.array(
    z.strictObject({
      name: z.string().min(1),
      status: z.enum(["PASS", "WARN", "FAIL", "SKIP"]),
      detail: z.string(),
      org: z.string().optional(),
    }),
  ),
  exit_code: z.union([z.literal(0), z.literal(1), z.literal(2)]),
});

describe("sf2loki doctor against the simulated org", () => {
  it("passes every check (or skips with a reason) and exits 0", async () => {
    const r = await cli(["doctor", "--config", configFile("ok")]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const lines = r.stdout.trimEnd().split("\n");
    assert.match(lines[0]!, /^name\s+status\s+detail$/);
    const names = lines.slice(1, -2).map((l) => l.split(/\s+/)[0]);
    assert.deepEqual(names, [
      "config",
      "proxy",
      "auth",
      "permissions",
      "pubsub:/event/LoginEventStream",
      "pubsub:/event/ApiEventStream",
      "pubsub:/event/LightningUriEventStream",
      "pubsub_managed",
      "entitlement",
      "traceflags",
      "loki",
      "transforms",
      "telemetry",
      "state",
      "coordinator",
      "limits",
    ]);
    assert.equal(lines.at(-2), "");
    assert.match(lines.at(-1)!, /^12 passed, 0 warnings, 0 failed, 4 skipped$/);
    assert.match(
      r.stdout,
      /auth\s+PASS\s+flow=client_credentials instance_url=http:\/\/127\.0\.0\.1:\d+ org_id=00DSIM/,
    );
    assert.match(
      r.stdout,
      /permissions\s+PASS\s+EventLogFile describe OK; SELECT Id FROM ApiAnomalyEventStore OK/,
    );
    assert.match(r.stdout, /entitlement\s+PASS\s+org produces 2 Daily EventType/);
    assert.match(r.stdout, /traceflags\s+PASS\s+1 active TraceFlag/);
    assert.match(r.stdout, /state\s+PASS\s+.*lock .*\.lock taken and released/);
    assert.match(r.stdout, /limits\s+PASS\s+DailyApiRequests 14876\/15000 remaining/);
    // The probe line reached Loki with the daemon's static labels and structured metadata (#116).
    const probe = world.loki.entries({ source: "sf2loki-doctor" });
    assert.ok(probe.length >= 1);
    assert.equal(probe[0]!.labels.job, "sf2loki");
    assert.equal(probe[0]!.labels.sf_org_id, world.org.orgId);
    assert.equal(probe[0]!.metadata.level, "info");
  });

  it("managed subscriptions (#36): one row each, PASS when it runs on its topic, FAIL naming the fix otherwise", async () => {
    const managed = await startDemoWorld({ eventsPerTopic: 5, managed: true });
    try {
      const [login, api, uri] = managed.org.stats().managed.map((m) => m.developerName) as [
        string,
        string,
        string,
      ];
      managed.org.faults.setManagedSubscriptionState(api, "STOP");
      managed.org.faults.deleteManagedSubscription(uri);
      const config = managed.config(join(dir, "managed-state.json"));
      const r = await cli([
        "doctor",
        "--json",
        "--config",
        writeFile(dir, "managed.yaml", stringify(config)),
      ]);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      const rows = new Map(rowsOf(r.stdout).map((row) => [row.name, row]));
      const row = (name: string): Row => rows.get(`pubsub_managed:${name}`)!;
      assert.equal(row(login).status, "PASS");
      assert.match(row(login).detail, /carries \/event\/LoginEventStream, state RUN, defaultReplay EARLIEST/);
      assert.equal(row(api).status, "FAIL");
      assert.match(row(api).detail, /in state STOP: set it to RUN/);
      assert.equal(row(uri).status, "FAIL");
      assert.match(
        row(uri).detail,
        /no ManagedEventSubscription SF2Loki_LightningUriEventStream in the org: create it/,
      );
      // The topics themselves are probed as any subscribed topic is.
      assert.equal(rows.get("pubsub:/event/ApiEventStream")?.status, "PASS");
    } finally {
      await managed.stop();
    }
  });

  it("--json prints one line that validates against the documented schema", async () => {
    const r = await cli(["doctor", "--json", "--config", configFile("json")]);
    assert.equal(r.code, 0, r.stdout);
    assert.equal(r.stdout.split("\n").length, 2, "one line");
    const report = reportSchema.parse(JSON.parse(r.stdout));
    assert.equal(report.exit_code, 0);
    // docs/cli.md carries the JSON Schema; it must name the same keys and statuses.
    const doc = readFileSync(new URL("../../docs/cli.md", import.meta.url), "utf8");
    const block = /```json doctor-schema\n([\s\S]*?)```/.exec(doc);
    assert.ok(block, "docs/cli.md has a ```json doctor-schema block");
    const schema = JSON.parse(block[1]!) as {
      required: string[];
      properties: { checks: { items: { properties: { status: { enum: string[] } }; required: string[] } } };
    };
    assert.deepEqual(schema.required, ["checks", "exit_code"]);
    assert.deepEqual(schema.properties.checks.items.required, ["name", "status", "detail"]);
    assert.deepEqual(schema.properties.checks.items.properties.status.enum, ["PASS", "WARN", "FAIL", "SKIP"]);
  });

  it("Loki answering 401: the loki row FAILs with the tenant/token hint, exit 1", async () => {
    world.loki.faults.failNext(1, 401, { body: "no org id" });
    try {
      const r = await cli(["doctor", "--json", "--config", configFile("loki401")]);
      assert.equal(r.code, 1);
      const loki = rowsOf(r.stdout).find((row) => row.name === "loki")!;
      assert.equal(loki.status, "FAIL");
      assert.match(loki.detail, /HTTP 401/);
      assert.match(loki.detail, /tenant_id/);
      assert.match(loki.detail, /logs:write/);
      assert.equal(reportSchema.parse(JSON.parse(r.stdout)).exit_code, 1);
    } finally {
      world.loki.faults.clear();
    }
  });

  it("auth failing SKIPs the org's dependent rows with the reason", async () => {
    const r = await cli([
      "doctor",
      "--json",
      "--config",
      configFile("badauth", (c) => {
        (c.salesforce as Record<string, unknown>).client_secret = "wrong";
      }),
    ]);
    assert.equal(r.code, 1);
    const rows = rowsOf(r.stdout);
    assert.equal(rows.find((x) => x.name === "auth")!.status, "FAIL");
    for (const name of ["permissions", "pubsub", "entitlement", "traceflags", "limits"]) {
      const row = rows.find((x) => x.name === name)!;
      assert.deepEqual([row.status, row.detail], ["SKIP", "skipped: auth failed"], name);
    }
    assert.equal(rows.find((x) => x.name === "loki")!.status, "PASS");
  });

  it("an S3 store whose bucket denies writes: the state row FAILs naming the permission", async () => {
    const s3 = new S3Emulator();
    await s3.start();
    const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: "test", AWS_SECRET_ACCESS_KEY: "test" });
    try {
      s3.inject((req) => req.method === "PUT", { kind: "error", status: 403, code: "AccessDenied" }, 5);
      const r = await cli([
        "doctor",
        "--json",
        "--config",
        configFile("s3", (c) => {
          c.state = {
            store: "s3",
            s3: { bucket: "state-bucket", region: "us-east-1", endpoint_url: s3.url },
          };
        }),
      ]);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      const state = rowsOf(r.stdout).find((row) => row.name === "state")!;
      assert.equal(state.status, "FAIL");
      assert.match(state.detail, /sf2loki\/state\.json\.sf2loki-doctor-probe/);
      assert.match(state.detail, /s3:PutObject/);
      // The real document was never written.
      assert.equal(s3.writes.filter((w) => !w.key.endsWith("probe")).length, 0);
    } finally {
      process.env.AWS_ACCESS_KEY_ID = saved.id;
      process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
      await s3.close();
    }
  });

  /** `doctor --json` with the state on a GCS emulator's `bucket`: the exit code and the state row. */
  async function doctorOnGcs(
    name: string,
    bucket: string,
    check: (gcs: GcsEmulator, code: number, state: Row) => void,
  ): Promise<void> {
    const gcs = new GcsEmulator();
    await gcs.start();
    try {
      const r = await cli([
        "doctor",
        "--json",
        "--config",
        configFile(name, (c) => {
          c.state = { store: "gcs", gcs: { bucket, endpoint_url: gcs.url } };
        }),
      ]);
      check(
        gcs,
        r.code,
        rowsOf(r.stdout).find((row) => row.name === "state")!,
      );
    } finally {
      await gcs.close();
    }
  }

  it("a GCS store: the document read, the probe object created conditionally and deleted, PASS", async () => {
    await doctorOnGcs("gcs", "state-bucket", (gcs, code, state) => {
      assert.equal(code, 0, state.detail);
      assert.equal(state.status, "PASS", state.detail);
      assert.match(
        state.detail,
        /gs:\/\/state-bucket\/sf2loki\/state\.json is readable \(0 checkpoint\(s\)\); conditional write and delete of gs:\/\/state-bucket\/sf2loki\/state\.json\.sf2loki-doctor-probe OK/,
      );
      assert.equal(gcs.getObject("state-bucket", "sf2loki/state.json.sf2loki-doctor-probe"), undefined);
      assert.equal(gcs.getObject("state-bucket", "sf2loki/state.json"), undefined);
      assert.ok(gcs.writes.length >= 1, "the probe was written");
    });
  });

  it("a GCS bucket that does not exist: the state row FAILs naming it and the command creating it (#29)", async () => {
    await doctorOnGcs("gcs-missing", "no-such-bucket", (_gcs, _code, state) => {
      assert.equal(state.status, "FAIL", state.detail);
      assert.match(
        state.detail,
        /the bucket no-such-bucket does not exist\. Create it \(`gcloud storage buckets create gs:\/\/no-such-bucket`\)/,
      );
      assert.equal(state.detail.split("\n").length, 1, state.detail);
    });
  });

  it("backfill with its state in a GCS bucket that does not exist: one line naming it, exit 1, no frames (#29)", async () => {
    const gcs = new GcsEmulator();
    await gcs.start();
    try {
      const since = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
      const r = await cli([
        "backfill",
        "--since",
        since,
        "--config",
        configFile("backfill-gcs-missing", (c) => {
          c.state = { store: "gcs", gcs: { bucket: "no-such-bucket", endpoint_url: gcs.url } };
        }),
      ]);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.match(
        r.stderr,
        /the bucket no-such-bucket does not exist\. Create it \(`gcloud storage buckets create/,
      );
      assert.doesNotMatch(r.stderr, /unexpected error|\n\s+at /);
    } finally {
      await gcs.close();
    }
  });

  it("a state lock held by a running daemon is a WARN naming the holder, not a FAIL", async () => {
    const path = configFile("locked");
    const lock = new FileLock(join(dir, "locked-state.json"), { heartbeatMs: 0 });
    await lock.acquire();
    try {
      const r = await cli(["doctor", "--json", "--config", path]);
      assert.equal(r.code, 0, r.stdout);
      const state = rowsOf(r.stdout).find((row) => row.name === "state")!;
      assert.equal(state.status, "WARN");
      assert.match(state.detail, new RegExp(`pid ${process.pid}`));
      assert.match(state.detail, /a daemon starting now would fail on it/);
    } finally {
      await lock.release();
    }
  });

  it("names the credential env vars when the object-store SDK found none", () => {
    assert.match(credentialHint("s3", "Could not load credentials from any providers"), /AWS_ACCESS_KEY_ID/);
    assert.match(
      credentialHint("gcs", "Could not load the default credentials"),
      /GOOGLE_APPLICATION_CREDENTIALS/,
    );
    assert.equal(credentialHint("s3", "AccessDenied"), "");
  });

  it("a bad config: config FAILs, everything else SKIPs, exit 2", async () => {
    const path = writeFile(dir, "bad.yaml", "sink: {loki: {url: 42}}\nnot_a_key: true\n");
    const r = await cli(["doctor", "--json", "--config", path]);
    assert.equal(r.code, 2);
    const rows = rowsOf(r.stdout);
    assert.equal(rows[0]!.name, "config");
    assert.equal(rows[0]!.status, "FAIL");
    assert.ok(rows.slice(1).every((x) => x.status === "SKIP" && x.detail === "skipped: config failed"));
    assert.equal(reportSchema.parse(JSON.parse(r.stdout)).exit_code, 2);
  });

  it("--org with an unknown name on a multi-org config: org FAILs, exit 2", async () => {
    const path = configFile("multi", (c) => {
      const sf = c.salesforce;
      const sources = c.sources;
      delete c.salesforce;
      delete c.sources;
      c.orgs = [{ name: "prod", salesforce: sf, sources }];
    });
    const r = await cli(["doctor", "--json", "--org", "nope", "--config", path]);
    assert.equal(r.code, 2);
    const org = rowsOf(r.stdout).find((x) => x.name === "org")!;
    assert.equal(org.status, "FAIL");
    assert.match(org.detail, /--org 'nope' is not configured; available orgs: \[prod\]/);
    // Every org by default: rows are scoped prod/... and carry "org".
    const all = await cli(["doctor", "--json", "--config", path]);
    assert.equal(all.code, 0, all.stdout);
    const auth = reportSchema.parse(JSON.parse(all.stdout)).checks.find((x) => x.name === "prod/auth");
    assert.ok(auth);
    assert.equal(auth.org, "prod");
    assert.equal(auth.status, "PASS");
  });

  it("an org with its own Loki destination: each destination gets its probe row, --org checks only its own", async () => {
    const other = await startLokiReceiver();
    try {
      const path = configFile("dest", (c) => {
        const sf = c.salesforce;
        delete c.salesforce;
        delete c.sources;
        c.orgs = [
          { name: "prod", salesforce: sf },
          { name: "emea", salesforce: sf, sink: { loki: { url: other.pushUrl, tenant_id: "emea-t" } } },
        ];
      });
      other.faults.failNext(1, 401, { body: "no org id" });
      const r = await cli(["doctor", "--json", "--config", path]);
      assert.equal(r.code, 1, r.stdout);
      const rows = rowsOf(r.stdout);
      assert.equal(rows.find((x) => x.name === "loki")!.status, "PASS");
      const own = rows.find((x) => x.name === "loki@emea")!;
      assert.equal(own.status, "FAIL");
      assert.match(own.detail, /^orgs emea -> tenant emea-t: .*HTTP 401/);
      assert.match(own.detail, /orgs\[emea\]\.sink\.loki\.tenant_id/);
      const only = await cli(["doctor", "--json", "--org", "emea", "--config", path]);
      assert.equal(only.code, 0, only.stdout);
      const names = rowsOf(only.stdout).map((x) => x.name);
      assert.ok(names.includes("loki@emea") && !names.includes("loki"), names.join(","));
      assert.equal(other.entries({ source: "sf2loki-doctor" })[0]?.tenant, "emea-t");
    } finally {
      await other.stop();
    }
  });
});
