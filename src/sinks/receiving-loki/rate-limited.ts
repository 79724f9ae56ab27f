// Loki's answer when a tenant pushes faster than its ingestion limit allows (a 429 from the
// distributor's rate limiter, grafana/loki pkg/validation RateLimitedErrorMsg). It is not an outage: Loki
// is up and says how much it takes. A request larger than the tenant's burst is refused forever, so
// retrying the same body can never succeed; the sink splits and paces instead (tenant-pacer.ts).
import { Sf2LokiError } from "../../errors.ts";

/** What Loki's 429 said about the tenant's ingestion limit. */
export interface RateLimitNotice {
  tenant: string;
  /** The limit Loki named, bytes per second of line plus structured metadata; absent when not named. */
  limitBytesPerSecond: number | undefined;
  /** What the refused request held, as Loki counted it. */
  lines: number | undefined;
  bytes: number | undefined;
}

// 3.4: "Ingestion rate limit exceeded for user slow (limit: 262144 bytes/sec) while attempting to ingest
// '1000' lines totaling '740013' bytes, …"; later versions lower-case it and may name a policy, or list
// several buckets without one limit.
const SINGLE =
  /ingestion rate limit exceeded for user (\S+?)(?:, policy \S+)? \(limit: (\d+) bytes\/sec\) while attempting to ingest '(\d+)' lines totaling '(\d+)' bytes/i;
const ANY = /ingestion rate limit exceeded for user (\S+?)[ ,:]/i;

/** The notice in a 429's body, or undefined when the 429 is about something else (a proxy, a stream). */
export function parseRateLimited(body: string): RateLimitNotice | undefined {
  const single = SINGLE.exec(body);
  if (single) {
    return {
      tenant: single[1]!,
      limitBytesPerSecond: Number(single[2]),
      lines: Number(single[3]),
      bytes: Number(single[4]),
    };
  }
  const any = ANY.exec(body);
  if (!any) return undefined;
  return { tenant: any[1]!, limitBytesPerSecond: undefined, lines: undefined, bytes: undefined };
}

/** A push refused for the tenant's ingestion rate: the sink splits and paces, it does not back off blind. */
export class LokiRateLimitedError extends Sf2LokiError {
  readonly notice: RateLimitNotice;
  constructor(where: string, notice: RateLimitNotice, detail: string) {
    super("SF2LOKI_LOKI_RATE_LIMITED", `Loki at ${where} refused a push with HTTP 429: ${detail}`);
    this.notice = notice;
  }
}
