// The userinfo of a URL is hidden whether or not the URL parses (#34): with and without a scheme, a `/`
// or an `@` in the password, inside free text, and nothing else in the text is touched.
import assert from "node:assert/strict";
import { test } from "node:test";
import { withoutUserinfo, withoutUserinfoIn } from "../../src/util/userinfo.ts";

test("withoutUserinfo hides everything up to the last @ of one value, keeping its scheme", () => {
  const cases: [string, string][] = [
    ["http://user:pw@proxy:3128", "http://***@proxy:3128"],
    ["user:s3cret@proxy:31x8", "***@proxy:31x8"],
    ["http://user:pa/ss@proxy:3128", "http://***@proxy:3128"],
    ["http://us@er:p@ss@proxy:3128/", "http://***@proxy:3128/"],
    ["https://token@loki.example.com/loki/api/v1/push", "https://***@loki.example.com/loki/api/v1/push"],
    ["http://proxy:3128", "http://proxy:3128"],
    ["proxy:3128", "proxy:3128"],
  ];
  for (const [value, shown] of cases) assert.equal(withoutUserinfo(value), shown, value);
});

test("withoutUserinfoIn hides the userinfo of every URL in a text and leaves the rest as it was", () => {
  assert.equal(
    withoutUserinfoIn(
      'connect to http://svc:pa/ss@proxy:3128 failed; "https://a:b@c@loki:3100/x" then mail ops@example.com',
    ),
    'connect to http://***@proxy:3128 failed; "https://***@loki:3100/x" then mail ops@example.com',
  );
  assert.equal(
    withoutUserinfoIn("http://proxy:3128 and https://loki/x"),
    "http://proxy:3128 and https://loki/x",
  );
  assert.equal(withoutUserinfoIn('{"url": "http://u:p@h:1"}'), '{"url": "http://***@h:1"}');
});
