import assert from "node:assert/strict";
import { createServer } from "node:http";
import { describe, it } from "node:test";
import { request } from "undici";
import { createSimRest, sfDatetime, simId, startSimRest } from "../../src/sim/salesforce-rest/index.ts";
import { matches, orderRecords, parseSoql } from "../../src/sim/salesforce-rest/soql.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { listenLoopback } from "../support/loopback.ts";

const where = (soql: string) => parseSoql(`SELECT Id FROM X WHERE ${soql}`).where!;

describe("simulated org: SOQL", () => {
  const r = {
    Id: "0YqSIM000000000005",
    EventDate: "2026-01-01T10:00:00.000+0000",
    Status: "Success",
    Score: 7,
    Nul: null,
  };

  it("evaluates comparisons on dates, Ids, strings and numbers with AND, OR, NOT and IN", () => {
    assert.ok(matches(r, where("EventDate >= 2026-01-01T10:00:00.000Z")));
    assert.ok(!matches(r, where("EventDate > 2026-01-01T10:00:00Z")));
    assert.ok(matches(r, where("EventDate = 2026-01-01T11:00:00+01:00")));
    assert.ok(
      matches(
        r,
        where(
          "(EventDate > 2026-01-01T10:00:00Z OR (EventDate = 2026-01-01T10:00:00Z AND Id > '0YqSIM000000000004'))",
        ),
      ),
    );
    assert.ok(!matches(r, where("Id NOT IN ('0YqSIM000000000005','x')")));
    assert.ok(matches(r, where("Status IN ('Failed', 'Success') AND Score >= 7 AND NOT Score > 7")));
    assert.ok(matches(r, where("Nul = null AND Status != null")));
    assert.ok(matches(r, where("Status = 'it\\'s' OR Status = 'Success'")));
  });

  it("orders with nulls first ascending and last descending, over several keys", () => {
    const rows = [
      { a: 2, b: "x" },
      { a: null, b: "y" },
      { a: 1, b: "z" },
      { a: 1, b: "a" },
    ];
    assert.deepEqual(
      orderRecords(rows, [
        { field: "a", desc: false },
        { field: "b", desc: false },
      ]).map((x) => x.b),
      ["y", "a", "z", "x"],
    );
    assert.deepEqual(
      orderRecords(rows, [{ field: "a", desc: true }]).map((x) => x.b),
      ["x", "z", "a", "y"],
    );
  });

  it("answers like Salesforce: FIELDS(ALL) needs LIMIT <= 200, Big Objects only one DESC order, GROUP BY", async (t) => {
    const sim = await startSimRest({
      objects: {
        LoginEvent: [
          { Id: simId("0Yq", 1), EventDate: sfDatetime(0), Kind: "a" },
          { Id: simId("0Yq", 2), EventDate: sfDatetime(1), Kind: "a" },
        ],
      },
      bigObjects: ["LoginEvent"],
    });
    t.after(() => sim.stop());
    const q = async (soql: string) => {
      const res = await request(
        `${sim.instanceUrl}/services/data/v60.0/query?q=${encodeURIComponent(soql)}`,
        {
          headers: { authorization: "Bearer t" },
        },
      );
      const text = await res.body.text();
      const body = (text.startsWith("<") ? [] : JSON.parse(text)) as Record<string, unknown> &
        { errorCode?: string }[];
      return { status: res.statusCode, body };
    };
    assert.equal((await q("SELECT FIELDS(ALL) FROM LoginEvent ORDER BY EventDate DESC")).status, 400);
    const asc = await q("SELECT FIELDS(ALL) FROM LoginEvent ORDER BY EventDate ASC LIMIT 10");
    assert.equal(asc.body[0]?.errorCode, "BIG_OBJECT_UNSUPPORTED_OPERATION");
    const ok = await q("SELECT FIELDS(ALL) FROM LoginEvent ORDER BY EventDate DESC LIMIT 10");
    assert.equal((ok.body as unknown as { records: unknown[] }).records.length, 2);
    const grouped = await q("SELECT Kind FROM LoginEvent GROUP BY Kind");
    assert.deepEqual((grouped.body as unknown as { records: unknown[] }).records, [
      { attributes: { type: "AggregateResult" }, Kind: "a" },
    ]);
    assert.equal((await q("SELECT Id FROM Nope")).body[0]?.errorCode, "INVALID_TYPE");
    const long = await q(
      `SELECT Id FROM LoginEvent WHERE Id NOT IN (${Array.from({ length: 800 }, (_, i) => `'${simId("0Yq", i)}'`).join(",")})`,
    );
    assert.equal(long.status, 414);
  });

  it("hides rows until they become visible on the org's clock", async (t) => {
    const clock = new ManualClock({ startMs: 1000 });
    const sim = await startSimRest({ clock, objects: { X: [{ Id: simId("0Yq", 1), $visibleAtMs: 5000 }] } });
    t.after(() => sim.stop());
    const count = async () => {
      const res = await request(
        `${sim.instanceUrl}/services/data/v60.0/query?q=${encodeURIComponent("SELECT Id FROM X")}`,
        {
          headers: { authorization: "Bearer t" },
        },
      );
      return ((await res.body.json()) as { totalSize: number }).totalSize;
    };
    assert.equal(await count(), 0);
    clock.advance(4000);
    assert.equal(await count(), 1);
  });
});

describe("simulated org: HTTP surface", () => {
  it("mounts as a handler that leaves other paths to the next one", async (t) => {
    const sim = createSimRest();
    const server = createServer((req, res) => {
      if (!sim(req, res)) {
        res.writeHead(418);
        res.end();
      }
    });
    const base = await listenLoopback(t, server);
    assert.equal((await request(`${base}/services/oauth2/token`)).statusCode, 418);
    const unauth = await request(`${base}/services/data/v60.0/limits`);
    assert.equal(unauth.statusCode, 401);
    await unauth.body.dump();
    const ok = await request(`${base}/services/data/v60.0/limits`, {
      headers: { authorization: "Bearer x" },
    });
    assert.equal(ok.statusCode, 200);
    await ok.body.dump();
  });

  it("generates CSV lazily and deterministically, with REQUEST_IDs numbered per type", async (t) => {
    const sim = await startSimRest({
      seed: 7,
      eventLogFiles: [
        {
          Id: simId("0AT", 1),
          EventType: "API",
          Interval: "Hourly",
          LogDate: sfDatetime(0),
          CreatedDate: sfDatetime(0),
          Sequence: 1,
          rows: 1_000_000,
          firstRow: 10,
        },
      ],
    });
    t.after(() => sim.stop());
    const read = async () => {
      const res = await request(
        `${sim.instanceUrl}/services/data/v60.0/sobjects/EventLogFile/${simId("0AT", 1)}/LogFile`,
        {
          headers: { authorization: "Bearer t" },
        },
      );
      let head = "";
      for await (const chunk of res.body) {
        head += (chunk as Buffer).toString();
        if (head.length > 2000) break;
      }
      res.body.destroy();
      return head.split("\n").slice(0, 3);
    };
    const first = await read();
    assert.deepEqual(await read(), first);
    assert.match(first[0]!, /^"EVENT_TYPE","TIMESTAMP","REQUEST_ID",/);
    assert.equal(first[0]!.split(",").length, 21);
    assert.match(first[1]!, /"sim-API-10"/);
    assert.ok(sim.stats.bytesServed < 10_000_000, `${sim.stats.bytesServed} bytes generated for two peeks`);
  });
});
