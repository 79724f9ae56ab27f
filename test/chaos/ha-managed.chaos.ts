// HA with managed event subscriptions (#36): only the lease holder streams and commits on Salesforce;
// after a kill -9 the new leader resumes from the subscription's committed replay (what the killed one
// pushed and had not committed is looked up in Loki, not pushed twice), after a SIGTERM from the
// commits the stopped leader's drain sent before it released its stream.
import assert from "node:assert/strict";
import { test } from "node:test";
import { HaRig, killThenTerm } from "./ha-support.ts";

test("s3_lease + S3 store, managed subscriptions: kill -9 then SIGTERM of the leader, nothing lost or copied, Salesforce committed to the last event", async (t) => {
  const rig = await HaRig.start(t, "s3_lease + s3", { seed: 25, eventsPerTopic: 5000, managed: true });
  const figures = await killThenTerm(t, rig);
  const { managed, topics, subscribeCalls, managedSubscribeCalls } = rig.world.org.stats();
  t.diagnostic(
    `managed: ${JSON.stringify({ figures, managedSubscribeCalls, commits: managed.map((m) => [m.developerName, m.commits]) })}`,
  );
  assert.equal(subscribeCalls, 0, "no topic was subscribed to without its managed subscription");
  for (const m of managed) {
    assert.equal(m.committed, topics[m.topic]!.maxReplayId, `${m.developerName} committed to the last event`);
    assert.equal(m.refusedCommits, 0, `${m.developerName}: a commit was refused`);
  }
});
