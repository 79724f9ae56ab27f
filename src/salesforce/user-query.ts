// One batched read of the org's User object: who the ids are, in one REST request.
import type { RestClient } from "./rest.ts";
import { soqlString } from "./soql-literals.ts";

/** A User record as the query returns it; a relationship the user lacks (no role) is null. */
export interface SalesforceUser {
  id: string;
  username: string | null;
  name: string | null;
  profile: string | null;
  role: string | null;
  isActive: boolean | null;
}

const FIELDS = "Id, Username, Name, Profile.Name, UserRole.Name, IsActive";

export function userQuerySoql(ids: readonly string[]): string {
  return `SELECT ${FIELDS} FROM User WHERE Id IN (${ids.map(soqlString).join(", ")})`;
}

function text(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}

/** `Profile.Name` comes back as `{"Profile": {"attributes": …, "Name": "…"}}`, or `"Profile": null`. */
function relationName(v: unknown): string | null {
  return v !== null && typeof v === "object" ? text((v as Record<string, unknown>).Name) : null;
}

/** The users Salesforce knows among `ids` (ids it does not know are simply absent). */
export async function queryUsers(
  rest: RestClient,
  ids: readonly string[],
  signal: AbortSignal,
): Promise<SalesforceUser[]> {
  return usersOf(await rest.queryAll(userQuerySoql(ids), USER_CALL(signal)));
}

/** Salesforce's REST query page size: a result of n records took ceil(n / 2000) requests. */
const QUERY_PAGE = 2000;

/**
 * The `limit` users who logged in last (never-logged-in ones after them: DESC puts nulls last), the
 * ones the org's events are likeliest to name; `requests` is the REST requests it took.
 */
export async function queryRecentUsers(
  rest: RestClient,
  limit: number,
  signal: AbortSignal,
): Promise<{ users: SalesforceUser[]; requests: number }> {
  const soql = `SELECT ${FIELDS} FROM User ORDER BY LastLoginDate DESC LIMIT ${Math.floor(limit)}`;
  const records = await rest.queryAll(soql, USER_CALL(signal));
  return { users: usersOf(records), requests: Math.max(1, Math.ceil(records.length / QUERY_PAGE)) };
}

/**
 * One attempt: the directory's own loop retries with its backoff, and a failed warm-up must answer
 * at once (a source holds its first entry for it).
 */
const USER_CALL = (signal: AbortSignal) =>
  ({ where: "the User lookup of enrich.users", api: "user_lookup", signal, retry: false }) as const;

function usersOf(records: readonly Record<string, unknown>[]): SalesforceUser[] {
  return records.flatMap((r) =>
    typeof r.Id === "string"
      ? [
          {
            id: r.Id,
            username: text(r.Username),
            name: text(r.Name),
            profile: relationName(r.Profile),
            role: relationName(r.UserRole),
            isActive: typeof r.IsActive === "boolean" ? r.IsActive : null,
          },
        ]
      : [],
  );
}
