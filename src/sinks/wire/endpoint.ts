// A push endpoint's URL, checked once at construction, and its connections' bounded close.
import { ConfigError } from "../../errors.ts";
import type { Clock } from "../../util/clock.ts";
import { isClosed, type Dispatcher } from "../../util/http-dispatchers.ts";

/**
 * Parses `<key>.url`; userinfo is refused so credentials never ride in a logged URL (upstream #125).
 * `example` is the full URL shape the operator should set.
 */
export function parsePushUrl(raw: string, key: string, example: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${key}.url is not a valid URL; set the full push URL, e.g. ${example}.`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(
      `${key}.url must be http(s), got ${url.protocol}; set the full push URL, e.g. ${example}.`,
    );
  }
  if (url.username !== "" || url.password !== "") {
    throw new ConfigError(
      `${key}.url carries credentials; move them to ${key}.tenant_id and ${key}.auth_token(_file).`,
    );
  }
  return url;
}

const CLOSE_BUDGET_MS = 5_000;

/** Lets in-flight requests finish for up to 5 s, then tears the connections down. */
export async function closePool(pool: Dispatcher | undefined, clock: Clock): Promise<void> {
  if (!pool || isClosed(pool)) return;
  const timer = new AbortController();
  const closed = pool.close().then(() => true);
  const expired = clock.sleep(CLOSE_BUDGET_MS, timer.signal).then(
    () => false,
    () => true,
  );
  const inTime = await Promise.race([closed, expired]);
  timer.abort();
  if (!inTime) await pool.destroy();
}

/** A blank value counts as unset, like a blank secret (upstream #131). */
export function present(value: string | null | undefined): string | undefined {
  return value === undefined || value === null || value.trim() === "" ? undefined : value;
}
