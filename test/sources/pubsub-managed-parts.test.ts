// The managed-subscription mode's parts (#36): its config rules, the re-delivery memory, and how a
// refusal is read and worded.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Metadata, status } from "@grpc/grpc-js";
import { validateConfig } from "../../src/config/load.ts";
import { ConfigError } from "../../src/errors.ts";
import { refusalLine, refusalOf, Unacknowledged } from "../../src/sources/pubsub/managed.ts";

function tree(pubsub: Record<string, unknown>): Record<string, unknown> {
  return {
    salesforce: { client_id: "abc", username: "u@x.com", private_key: "pem" },
    sources: { pubsub },
    sink: { loki: { url: "http://127.0.0.1:3100/loki/api/v1/push" } },
  };
}

function configError(pubsub: Record<string, unknown>): string {
  try {
    validateConfig(tree(pubsub));
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.message;
  }
  return assert.fail("expected a config error");
}

describe("sources.pubsub.managed_subscriptions", () => {
  test("by developer name or by record id, each with its topic", () => {
    const c = validateConfig(
      tree({
        managed_subscriptions: [
          { name: "SF2Loki_Login", topic: "/event/LoginEventStream" },
          { id: "18x000000000001AAA", topic: "/event/ApiEventStream" },
        ],
      }),
    );
    assert.deepEqual(c.sources.pubsub.managed_subscriptions, [
      { name: "SF2Loki_Login", topic: "/event/LoginEventStream" },
      { id: "18x000000000001AAA", topic: "/event/ApiEventStream" },
    ]);
  });

  test("exactly one of name and id; a topic in one place only", () => {
    assert.match(
      configError({ managed_subscriptions: [{ topic: "/event/LoginEventStream" }] }),
      /managed_subscriptions\.0.*give exactly one of name and id/,
    );
    assert.match(
      configError({
        managed_subscriptions: [{ name: "A", id: "18x000000000001AAA", topic: "/event/LoginEventStream" }],
      }),
      /give exactly one of name and id/,
    );
    assert.match(
      configError({
        topics: ["/event/LoginEventStream"],
        managed_subscriptions: [{ name: "A", topic: "/event/LoginEventStream" }],
      }),
      /managed_subscriptions\.0\.topic.*also in sources\.pubsub\.topics: it would be subscribed twice/,
    );
    assert.match(
      configError({
        managed_subscriptions: [
          { name: "A", topic: "/event/LoginEventStream" },
          { name: "B", topic: "/event/LoginEventStream" },
        ],
      }),
      /managed_subscriptions\.1\.topic.*carried by two managed subscriptions/,
    );
    assert.match(
      configError({ managed_subscriptions: [{ name: "A", topic: "LoginEventStream" }] }),
      /topic name/,
    );
    assert.match(
      configError({ managed_subscriptions: [{ name: "a b", topic: "/event/X" }] }),
      /developer name/,
    );
  });
});

describe("Unacknowledged", () => {
  test("a re-delivery is known until Salesforce acknowledges a commit at or after it", () => {
    const u = new Unacknowledged();
    for (const id of ["a", "b", "c", "d"]) assert.equal(u.delivered(id, 1), true);
    assert.equal(u.delivered("b", 2), false, "re-delivered on stream 2");
    assert.equal(u.deliveredBy("b", 2), true);
    assert.equal(u.deliveredBy("c", 2), false, "stream 2 has not re-delivered c yet");
    u.acknowledged("b");
    assert.equal(u.size, 2);
    assert.equal(u.delivered("a", 3), true, "acknowledged: new to the run again");
    assert.equal(u.delivered("c", 3), false);
    u.acknowledged("zz");
    assert.equal(u.size, 3, "an unknown id acknowledges nothing");
  });

  test("bounded: past the cap the oldest are forgotten", () => {
    const u = new Unacknowledged(3);
    for (const id of ["a", "b", "c", "d"]) u.delivered(id, 1);
    assert.equal(u.size, 3);
    assert.equal(u.delivered("a", 1), true, "forgotten");
    assert.equal(u.delivered("d", 1), false);
  });
});

describe("refusals", () => {
  const err = (code: number, details: string) =>
    Object.assign(new Error(`${code} ${details}`), { code, details, metadata: new Metadata() });
  const m = { name: "SF2Loki_Login", topic: "/event/LoginEventStream" };

  test("read from the status and its details", () => {
    assert.equal(refusalOf(err(status.NOT_FOUND, "Managed subscription X not found")), "missing");
    assert.equal(
      refusalOf(err(status.FAILED_PRECONDITION, "Managed subscription X is in state STOP")),
      "stopped",
    );
    assert.equal(refusalOf(err(status.FAILED_PRECONDITION, "X already has an active subscriber")), "busy");
    assert.equal(refusalOf(err(status.PERMISSION_DENIED, "no access")), "other");
    assert.equal(refusalOf(err(status.UNAVAILABLE, "down")), undefined, "an outage is not a refusal");
  });

  test("each line says what happened and what to do", () => {
    const missing = refusalLine("missing", m, err(status.NOT_FOUND, "not found"), "org prod");
    assert.match(
      missing,
      /^managed subscription SF2Loki_Login \(\/event\/LoginEventStream\) does not exist in org prod/,
    );
    assert.match(missing, /create it .*or correct sources\.pubsub\.managed_subscriptions/);
    assert.match(refusalLine("stopped", m, err(9, "STOP"), "the org"), /set its state to RUN/);
    assert.match(refusalLine("busy", m, err(9, "already"), "the org"), /Salesforce serves one at a time/);
  });
});
