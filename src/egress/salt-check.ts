// The startup check the Python version made (app.py): a `hash` rule without `transform_salt` hashes
// with a bare SHA-256, which anyone can reverse for small value sets (emails, IPs) by hashing the
// candidates. Not an error (it worked, and pseudonyms must stay stable across the swap); a WARNING.
import type { SourcesConfig } from "../config/schema.ts";

/** The enabled sources with a `hash` rule while the salt is empty, as `sources.<name>` paths. */
export function unsaltedHashSources(sources: SourcesConfig): string[] {
  if (sources.transform_salt) return [];
  const bySource = {
    pubsub: sources.pubsub,
    eventlog_objects: sources.eventlog_objects,
    eventlogfile: sources.eventlogfile,
    apexlog: sources.apexlog,
  };
  return Object.entries(bySource)
    .filter(([, s]) => s.enabled && s.transforms.some((r) => r.action === "hash"))
    .map(([name]) => `sources.${name}`);
}
