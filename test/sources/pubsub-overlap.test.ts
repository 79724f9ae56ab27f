import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { validateConfig } from "../../src/config/load.ts";
import { ConfigError } from "../../src/errors.ts";
import { buildOffline } from "../../src/daemon/wiring.ts";
import { tempDir } from "../support/tmp.ts";
import {
  OverlapError,
  categoryOfElfType,
  categoryOfObject,
  categoryOfTopic,
  checkOverlap,
  ownedCategories,
  type OverlapSourcesConfig,
} from "../../src/sources/overlap.ts";

describe("category normalisation", () => {
  it("strips the first matching suffix, lowercases and applies aliases", () => {
    assert.equal(categoryOfTopic("/event/LoginEventStream"), "login");
    assert.equal(categoryOfTopic("/event/ApiAnomalyEvent"), "apianomaly");
    assert.equal(categoryOfTopic("/data/AccountChangeEvent"), "accountchange");
    assert.equal(categoryOfTopic("/event/Order_Shipped__e"), "order_shipped__e");
    assert.equal(categoryOfTopic("/event/Event"), "event");
    assert.equal(categoryOfObject("ApiAnomalyEventStore"), "apianomaly");
    assert.equal(categoryOfObject("LoginHistory"), "login");
    // The newer Threat Detection pairs (#38): a store and its stream are one category, and a login
    // anomaly is not a login.
    assert.equal(categoryOfTopic("/event/UniversalAnomalyEvent"), "universalanomaly");
    assert.equal(categoryOfObject("UniversalAnomalyEventStore"), "universalanomaly");
    assert.equal(categoryOfTopic("/event/LoginAnomalyEvent"), "loginanomaly");
    assert.equal(categoryOfObject("LoginAnomalyEventStore"), "loginanomaly");
    assert.equal(categoryOfElfType("Login As"), "loginas");
    assert.equal(categoryOfElfType("API"), "api");
  });
});

describe("checkOverlap", () => {
  const base: OverlapSourcesConfig = {
    pubsub: { enabled: true, topics: ["/event/LoginEventStream", "/event/ApiEventStream"] },
    eventlog_objects: { enabled: true, objects: [{ name: "LoginEvent" }] },
    eventlogfile: { enabled: true, event_types: ["Login", { name: "Report" }] },
  };

  it("rejects a category fed by two sources, listing sorted source=identifier pairs and the remedies", () => {
    assert.throws(
      () => {
        checkOverlap(base, "prod");
      },
      (e: unknown) =>
        e instanceof OverlapError &&
        e instanceof ConfigError &&
        e.code === "SF2LOKI_CONFIG" &&
        e.message ===
          "sources overlap in org 'prod': login (eventlog_objects=LoginEvent, eventlogfile=Login, pubsub=/event/LoginEventStream); ingest each category from one source only, or set sources.allow_overlap: true",
    );
  });

  it("allows two topics of one category, disabled sources, filtered-out topics and allow_overlap", () => {
    checkOverlap({ pubsub: { topics: ["/event/LoginEventStream", "/event/LoginEvent"] } });
    checkOverlap({
      ...base,
      eventlog_objects: { enabled: false, objects: [{ name: "LoginEvent" }] },
      eventlogfile: { enabled: false },
    });
    checkOverlap({
      ...base,
      pubsub: { ...base.pubsub, exclude: ["*Login*"] },
      eventlog_objects: { enabled: false },
      eventlogfile: { enabled: true, event_types: ["Login"] },
    });
    checkOverlap({ ...base, allow_overlap: true });
  });

  it("rejects a pubsub * together with an ELF * unless ELF has an exclude (#91)", () => {
    const dual: OverlapSourcesConfig = {
      pubsub: { enabled: true, topics: ["*"] },
      eventlogfile: { enabled: true, event_types: ["*"] },
    };
    assert.throws(() => {
      checkOverlap(dual);
    }, /both contain "\*"/);
    checkOverlap({ ...dual, eventlogfile: { enabled: true, event_types: ["*"], exclude: ["Login"] } });
    checkOverlap({ ...dual, allow_overlap: true });
    checkOverlap({ ...dual, pubsub: { enabled: false, topics: ["*"] } });
  });

  it("fires on a loaded config, where event_types entries are objects (parity audit §1a)", async () => {
    const tree = (eventlogfile: Record<string, unknown>) => ({
      salesforce: { auth_mode: "client_credentials", client_id: "x", client_secret: "y" },
      sources: {
        pubsub: { topics: ["*"] },
        eventlogfile: { enabled: true, event_types: ["*"], ...eventlogfile },
      },
      sink: { loki: { url: "http://127.0.0.1:9/loki/api/v1/push" } },
      state: { file: { path: join(tempDir(), "state.json") } },
    });
    await assert.rejects(async () => buildOffline(validateConfig(tree({}))), OverlapError);
    await buildOffline(validateConfig(tree({ exclude: ["Login"] })));
  });

  it("reports the categories other sources own, for wildcard filtering (#15)", () => {
    const cfg: OverlapSourcesConfig = {
      pubsub: { enabled: true, topics: ["*", "/event/ApiEventStream"] },
      eventlog_objects: { enabled: true, objects: [{ name: "LoginHistory" }] },
      eventlogfile: { enabled: true, event_types: ["*", "Report"] },
    };
    assert.deepEqual([...ownedCategories(cfg, "pubsub")].sort(), ["login", "report"]);
    assert.deepEqual([...ownedCategories(cfg, "eventlogfile")].sort(), ["api", "login"]);
    assert.equal(ownedCategories({ ...cfg, allow_overlap: true }, "pubsub").size, 0);
  });
});
