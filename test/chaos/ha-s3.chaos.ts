// HA end to end with s3_lease + the S3 store (one bucket, two objects) on the S3 emulator: real
// daemons, a kill -9 and a SIGTERM of the leader mid-stream.
import { test } from "node:test";
import { HaRig, killThenTerm } from "./ha-support.ts";

test("s3_lease + S3 store: kill -9 then SIGTERM of the leader, nothing lost, one leader", async (t) => {
  await killThenTerm(t, await HaRig.start(t, "s3_lease + s3", { seed: 22, eventsPerTopic: 5000 }));
});
