// HA end to end with azure_lease + the Azure store (one container, two blobs) on Azurite: real
// daemons, a kill -9 and a SIGTERM of the leader mid-stream.
import { test } from "node:test";
import { HaRig, killThenTerm } from "./ha-support.ts";

test("azure_lease + Azure store: kill -9 then SIGTERM of the leader, nothing lost, one leader", async (t) => {
  await killThenTerm(t, await HaRig.start(t, "azure_lease + azure", { seed: 23, eventsPerTopic: 5000 }));
});
