// What the simulated org of `startDemoWorld` emitted per source and event type, and what Loki holds of
// it by the same key, so a tier test compares the two in one assert. Polled sources without an event
// type (ApexLog) count under `<source>/*`.
import type { startDemoWorld } from "../../../src/sim/demo-world.ts";
import type { LokiReader } from "./real-loki.ts";

type World = Awaited<ReturnType<typeof startDemoWorld>>;

const TOPICS = ["LoginEventStream", "ApiEventStream", "LightningUriEventStream"];

/** `pubsub/<topic>` at `eventsPerTopic` each, and every polled source at what it emitted. */
export function emittedBySource(
  world: World,
  eventsPerTopic: number,
  topics: readonly string[] = TOPICS,
): Record<string, number> {
  const expected: Record<string, number> = {};
  for (const topic of topics) expected[`pubsub/${topic}`] = eventsPerTopic;
  for (const [key, d] of Object.entries(world.pollingStats())) {
    const [source, type] = key.split(":");
    expected[type ? `${source}/${type}` : `${source}/*`] = d.emitted;
  }
  return expected;
}

/** count_over_time by source and event type (labels or metadata), keyed as `emittedBySource` keys. */
export async function storedBySource(
  reader: LokiReader,
  selector: string,
  range: readonly [bigint, bigint],
  expected: Record<string, number>,
): Promise<Record<string, number>> {
  const got: Record<string, number> = {};
  for (const [k, n] of await reader.countBy(selector, range[0], range[1], ["source", "event_type"])) {
    const [source, type] = k.split("|");
    const key = expected[`${source}/${type}`] !== undefined ? `${source}/${type}` : `${source}/*`;
    got[key] = (got[key] ?? 0) + n;
  }
  return got;
}
