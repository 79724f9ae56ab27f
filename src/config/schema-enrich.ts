// `enrich:` — what the daemon adds to entries from Salesforce itself before they leave (docs/enrich.md).
import { z } from "zod";
import { bool, duration, int, section } from "./fields.ts";

const users = z.strictObject({
  enabled: bool(
    false,
    "Attach the user's Username, Name, Profile, Role and IsActive as structured metadata to every entry whose line carries a user id (UserId, USER_ID, LogUserId, commitUser), from a cache of the org's User records. A miss ships the entry without them and fills the cache for the next ones: enrichment never delays an entry.",
  ),
  max_users: int(
    10_000,
    "Bound on the users kept per org (oldest looked up evicted first), and on the ids waiting for a lookup. About 400 bytes a user.",
    { min: 1 },
  ),
  ttl: duration(
    "6h",
    "How long a looked-up user (or an id Salesforce does not know) is used before it is looked up again; a stale user keeps being attached until the new answer arrives.",
  ),
  max_queries_per_hour: int(
    120,
    "Bound on the User queries per org per hour, each one REST API request of the org's DailyApiRequests (sf2loki_enrich_user_queries).",
    { min: 1 },
  ),
  batch_size: int(
    200,
    "Ids per User query (`WHERE Id IN (...)`); at most 300 keeps the GET under Salesforce's 16 384-character URI.",
    { min: 1, max: 300 },
  ),
  batch_wait: duration(
    "2s",
    "How long a first unknown id waits for others to share its query; a full batch goes at once.",
  ),
  warmup_wait: duration(
    "5s",
    "At start the org's max_users most recently active users are read in one query (ceil(max_users / 2000) REST requests); each source holds its first entry for that answer at most this long, once, so the first entries after a start carry their user too. 0: never wait.",
  ),
});

const enrich = z.strictObject({
  users: section(users, "Identity enrichment from the org's User object (#38)."),
});

export const enrichField = section(enrich, "What is added to entries from the org itself.");
export type EnrichUsersConfig = z.infer<typeof users>;
