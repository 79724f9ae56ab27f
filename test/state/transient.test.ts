// What the CLI and the daemon call an outage of the state store, and the one-line messages they print
// for it (#29 items 1 and 3).
import assert from "node:assert/strict";
import { test } from "node:test";
import { foldLines } from "../../src/errors.ts";
import { stateErrors } from "../../src/state/errors.ts";
import { isNetworkError, isOutage } from "../../src/state/transient.ts";

test("a corrupt object is never an outage, whatever its cause's words; a terminated socket is", () => {
  const parse = new SyntaxError("Unterminated string in JSON at position 23 (line 1 column 24)");
  assert.equal(isNetworkError(parse), false, "V8's 'Unterminated' is not undici's 'terminated'");
  assert.equal(isOutage(parse), false);
  const hints = {
    location: "azure://acct/c/sf2loki/state.json",
    removeCommand: "az storage blob delete …",
  } as Parameters<typeof stateErrors.objectCorrupt>[0];
  const corrupt = stateErrors.objectCorrupt(hints, `invalid JSON: ${parse.message}`, parse);
  assert.equal(isOutage(corrupt), false);
  assert.equal(
    isOutage(stateErrors.fileCorrupt("/s/state.json", "invalid JSON: Unterminated string", parse)),
    false,
  );
  assert.equal(isOutage(new TypeError("terminated", { cause: new Error("other side closed") })), true);
  assert.equal(isOutage(Object.assign(new Error("socket hang up"), { code: "ECONNRESET" })), true);
});

test("an SDK's multi-line text is folded: 'did not answer' stays one line", () => {
  const azure = new Error(
    "The server is currently unable to receive requests. Please retry your request.\nRequestId:6f1c…\nTime:2026-12-04T02:00:00.0000000Z",
  );
  assert.equal(
    foldLines(azure.message),
    "The server is currently unable to receive requests. Please retry your request. RequestId:6f1c… Time:2026-12-04T02:00:00.0000000Z",
  );
  const message = stateErrors.unavailable("azure://acct/c/sf2loki/state.json", azure).message;
  assert.equal(message.split("\n").length, 1, message);
  assert.match(message, /did not answer \(The server is currently unable .* RequestId:6f1c… Time:/);
});
