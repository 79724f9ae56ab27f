import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigError } from "../../src/errors.ts";
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
