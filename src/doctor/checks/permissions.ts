// `permissions`: the EventLogFile describe call every ELF listing needs, plus one row of the first
// SOQL-polled object when that source is on. A 403 means the integration user lacks the permission.
import { describeError } from "../../errors.ts";
import { SalesforceApiError } from "../../salesforce/rest-errors.ts";
import { soqlIdentifier } from "../../salesforce/soql-literals.ts";
import { fail, pass, type CheckRow, type OrgUnderCheck } from "../check.ts";

export async function checkPermissions(org: OrgUnderCheck, signal: AbortSignal): Promise<CheckRow> {
  const { rest } = org.wiring;
  const probes: string[] = [];
  try {
    await rest.getJson(rest.path("sobjects/EventLogFile/describe"), {
      signal,
      where: "EventLogFile describe",
      api: "describe",
    });
    probes.push("EventLogFile describe OK");
  } catch (err) {
    if (err instanceof SalesforceApiError && err.status === 403) {
      return fail(
        "permissions",
        `EventLogFile describe answered 403: the integration user probably lacks the "View Event Log Files" permission; grant it through a permission set (${describeError(err)})`,
      );
    }
    return fail("permissions", `EventLogFile describe failed: ${describeError(err)}`);
  }
  const objects = org.wiring.org.sources.eventlog_objects;
  const first = objects.enabled ? objects.objects[0] : undefined;
  if (first) {
    try {
      await rest.queryAll(`SELECT Id FROM ${soqlIdentifier(first.name)} LIMIT 1`, {
        signal,
        where: `a probe query of ${first.name}`,
        api: "soql",
      });
      probes.push(`SELECT Id FROM ${first.name} OK`);
    } catch (err) {
      return fail(
        "permissions",
        `SELECT Id FROM ${first.name} failed: ${describeError(err)}; the user needs read access to ${first.name} (a permission set with "View Real-Time Event Monitoring Data")`,
      );
    }
  }
  return pass("permissions", probes.join("; "));
}
