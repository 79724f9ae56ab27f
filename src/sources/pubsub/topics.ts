// Topic resolution (§4.1): `*` is a discovery marker, never a topic; explicit and discovered topics
// go through the same dedupe + include/exclude filter.
import { fnmatchcase } from "../../util/glob.ts";

export const WILDCARD = "*";

export interface TopicFilter {
  include: readonly string[];
  exclude: readonly string[];
}

/** Dedupes (first occurrence wins, order kept) and keeps topics matching an include and no exclude. */
export function filterTopics(topics: readonly string[], filter: TopicFilter): string[] {
  const include = filter.include.length > 0 ? filter.include : [WILDCARD];
  const seen = new Set<string>();
  const out: string[] = [];
  for (const topic of topics) {
    if (topic === WILDCARD || seen.has(topic)) continue;
    seen.add(topic);
    if (!include.some((g) => fnmatchcase(topic, g))) continue;
    if (filter.exclude.some((g) => fnmatchcase(topic, g))) continue;
    out.push(topic);
  }
  return out;
}

export function hasWildcard(topics: readonly string[]): boolean {
  return topics.includes(WILDCARD);
}

/** `event_type` label: the last path segment (`/data/AccountChangeEvent` → `AccountChangeEvent`). */
export function eventTypeOf(topic: string): string {
  return topic.slice(topic.lastIndexOf("/") + 1);
}
