// `entitlement`: which EventTypes the org produces for the configured interval, through the daemon's
// EventLogFile client; a configured type with no files usually means no Event Monitoring add-on.
import { describeError } from "../../errors.ts";
import { EventLogFileClient } from "../../salesforce/eventlogfile/client.ts";
import type { Clock } from "../../util/clock.ts";
import { fail, pass, skip, warn, type CheckRow, type OrgUnderCheck } from "../check.ts";

export async function checkEntitlement(
  org: OrgUnderCheck,
  clock: Clock,
  signal: AbortSignal,
): Promise<CheckRow> {
  const s = org.wiring.org.sources.eventlogfile;
  if (!s.enabled) return skip("entitlement", "eventlogfile disabled");
  let produced: string[];
  try {
    produced = await new EventLogFileClient({ rest: org.wiring.rest, clock }).discover(s.interval, signal);
  } catch (err) {
    return fail("entitlement", `listing the org's ${s.interval} EventTypes failed: ${describeError(err)}`);
  }
  const have = new Set(produced);
  const missing = s.event_types.map((t) => t.name).filter((n) => n !== "*" && !have.has(n));
  if (missing.length > 0) {
    return warn(
      "entitlement",
      `no ${s.interval} files for ${missing.join(", ")}: check the Event Monitoring entitlement (the free tier has Login, Logout and a few more, Daily only) or the type name`,
    );
  }
  return pass("entitlement", `org produces ${produced.length} ${s.interval} EventType(s) total`);
}
