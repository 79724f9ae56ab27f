import assert from "node:assert/strict";
import { test } from "node:test";
import { userId18, userIdOfLine } from "../../src/enrich/users/user-id.ts";
import { canonicalJson } from "../../src/sources/shaping/json.ts";
import { simUserId, simUserId15 } from "../../src/sim/salesforce-rest/users.ts";

test("a 15-character id gains Salesforce's case checksum; an 18-character one is kept", () => {
  // Salesforce's own example pattern (001A0000006Vm9r -> ...IAC), under the User key prefix.
  assert.equal(userId18("005A0000006Vm9r"), "005A0000006Vm9rIAC");
  assert.equal(userId18("005A0000006Vm9rIAC"), "005A0000006Vm9rIAC");
  assert.equal(userId18(simUserId15(42)), simUserId(42));
  assert.equal(userId18("001A0000006Vm9r"), undefined, "an Account id is no user");
  assert.equal(userId18("005A0000006Vm9"), undefined, "14 characters");
  assert.equal(userId18("005A0000006Vm9r-AC"), undefined);
});

test("the user id is read off the line under each source's field name", () => {
  const id = simUserId(3);
  for (const field of ["UserId", "USER_ID", "LogUserId"]) {
    assert.equal(userIdOfLine(canonicalJson({ A: 1, [field]: id, Z: "x" })), id, field);
  }
  const cdc = canonicalJson({ ChangeEventHeader: { commitUser: id, entityName: "Account" }, Name: "n" });
  assert.equal(userIdOfLine(cdc), id);
  assert.equal(userIdOfLine(canonicalJson({ USER_ID: simUserId15(3) })), id, "ELF's 15 characters");
});

test("a hashed, emptied or foreign user id is not looked up", () => {
  assert.equal(userIdOfLine(canonicalJson({ UserId: "sha256:9f86d081884c7d659a2feaa0c55ad015" })), undefined);
  assert.equal(userIdOfLine(canonicalJson({ UserId: "" })), undefined);
  assert.equal(userIdOfLine(canonicalJson({ UserId: "005SIM000000001AAAXYZ" })), undefined, "too long");
  assert.equal(userIdOfLine(canonicalJson({ UserId: null })), undefined);
  assert.equal(userIdOfLine(canonicalJson({ Username: "a@b.c" })), undefined);
  assert.equal(userIdOfLine("not json at all"), undefined);
});
