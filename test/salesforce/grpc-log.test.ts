// grpc-js's own log lines leave as records of our logger (#34): JSON, with credentials in a URL hidden.
import assert from "node:assert/strict";
import { test } from "node:test";
import { experimental, logVerbosity, setLogger } from "@grpc/grpc-js";
import { createLogger } from "../../src/obs/logger.ts";
import { routeGrpcLogs } from "../../src/salesforce/pubsub/grpc-log.ts";

test("grpc-js's log lines are JSON records of ours, component grpc-js, with no proxy password", (t) => {
  const lines: string[] = [];
  routeGrpcLogs(createLogger({ format: "json", destination: { write: (s: string) => lines.push(s) } }));
  t.after(() => {
    setLogger(console);
  });
  const stderr: string[] = [];
  t.mock.method(console, "error", (...args: unknown[]) => stderr.push(args.join(" ")));
  experimental.log(
    logVerbosity.ERROR,
    'E "https:" scheme not supported in proxy URI https://svc:s3cret@proxy:3129',
  );
  assert.deepEqual(stderr, [], "grpc-js wrote to stderr itself");
  assert.equal(lines.length, 1);
  const record = JSON.parse(lines[0]!) as Record<string, unknown>;
  assert.equal(record.component, "grpc-js");
  assert.equal(record.level, "warning");
  assert.match(
    String(record.event ?? record.msg),
    /scheme not supported in proxy URI https:\/\/\*\*\*@proxy:3129/,
  );
  assert.doesNotMatch(lines[0]!, /s3cret/);
});
