// `pubsub`: one row per explicit topic, each a gRPC GetTopic through the daemon's own Pub/Sub client.
// A topic the user may not subscribe to FAILs (Python ignored can_subscribe, #119).
import { status as grpcStatus, type ServiceError } from "@grpc/grpc-js";
import { describeError } from "../../errors.ts";
import { PubSubClient } from "../../salesforce/pubsub/client.ts";
import { fnmatchcase } from "../../util/glob.ts";
import { pubsubActive } from "../../sources/pubsub/settings.ts";
import { fail, pass, skip, warn, type CheckRow, type OrgUnderCheck } from "../check.ts";

export async function checkPubSub(org: OrgUnderCheck, signal: AbortSignal): Promise<CheckRow[]> {
  const s = org.wiring.org.sources.pubsub;
  if (!pubsubActive(s)) return [skip("pubsub", "pubsub disabled or no topics")];
  const managed = s.managed_subscriptions.map((m) => m.topic);
  if (s.topics.length === 1 && s.topics[0] === "*" && managed.length === 0) {
    return [warn("pubsub", "topics: ['*'] is resolved at runtime by discovery; no topic probed")];
  }
  // Managed topics too: a subscription streams only a topic the user may read.
  const topics = [
    ...new Set([
      ...s.topics
        .filter((t) => t !== "*")
        .filter((t) => s.include.some((g) => fnmatchcase(t, g)) && !s.exclude.some((g) => fnmatchcase(t, g))),
      ...managed,
    ]),
  ];
  if (topics.length === 0) {
    return [warn("pubsub", "no explicit topic survives sources.pubsub.include/exclude; nothing probed")];
  }
  const client = new PubSubClient({
    endpoint: s.endpoint,
    auth: org.wiring.auth,
    insecure: s.insecure,
  });
  try {
    const rows: CheckRow[] = [];
    for (const topic of topics) rows.push(await probeTopic(client, topic, signal));
    return rows;
  } finally {
    client.close();
  }
}

async function probeTopic(client: PubSubClient, topic: string, signal: AbortSignal): Promise<CheckRow> {
  const name = `pubsub:${topic}`;
  try {
    const info = await client.getTopic(topic, signal);
    if (!info.can_subscribe) {
      return fail(
        name,
        "topic exists but can_subscribe=false: give the integration user read access to this event (a permission set with the event's object permission)",
      );
    }
    return pass(name, "topic reachable");
  } catch (err) {
    const e = err as Partial<ServiceError>;
    const code = typeof e.code === "number" ? grpcStatus[e.code] : "ERROR";
    const details = e.details ?? describeError(err);
    const hint =
      e.code === grpcStatus.NOT_FOUND
        ? "; check the topic name in sources.pubsub.topics"
        : e.code === grpcStatus.PERMISSION_DENIED || e.code === grpcStatus.UNAUTHENTICATED
          ? "; the user needs API access and read permission on the event"
          : e.code === grpcStatus.UNAVAILABLE
            ? "; check sources.pubsub.endpoint and outbound port 7443"
            : "";
    return fail(name, `${code}: ${details}${hint}`);
  }
}
