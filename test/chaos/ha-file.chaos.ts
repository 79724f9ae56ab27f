// HA end to end with file_lease + the file store on a (simulated) shared volume: real daemons, a kill -9
// and a SIGTERM of the leader mid-stream.
import { test } from "node:test";
import { HaRig, killThenTerm } from "./ha-support.ts";

test("file_lease + file store: kill -9 then SIGTERM of the leader, nothing lost, one leader", async (t) => {
  await killThenTerm(t, await HaRig.start(t, "file_lease + file", { seed: 21, eventsPerTopic: 5000 }));
});
