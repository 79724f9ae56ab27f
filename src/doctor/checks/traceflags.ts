// `traceflags`: ApexLog only has rows while a TraceFlag is active; zero active ones is the common
// reason an enabled apexlog source ships nothing.
import { describeError } from "../../errors.ts";
import { soqlDatetime } from "../../salesforce/soql-datetime.ts";
import type { Clock } from "../../util/clock.ts";
import { pass, skip, warn, type CheckRow, type OrgUnderCheck } from "../check.ts";

export async function checkTraceFlags(
  org: OrgUnderCheck,
  clock: Clock,
  signal: AbortSignal,
): Promise<CheckRow> {
  if (!org.wiring.org.sources.apexlog.enabled) return skip("traceflags", "apexlog disabled");
  const now = soqlDatetime(new Date(clock.now()).toISOString());
  let count: number;
  try {
    const rows = await org.wiring.rest.queryAll(
      `SELECT Id FROM TraceFlag WHERE ExpirationDate > ${now} LIMIT 200`,
      { signal, tooling: true, where: "the TraceFlag query", api: "soql" },
    );
    count = rows.length;
  } catch (err) {
    return warn("traceflags", `TraceFlag query failed: ${describeError(err)}`);
  }
  if (count === 0) {
    return warn(
      "traceflags",
      "0 active TraceFlags: no ApexLog rows will be produced; enable debug logging for the user (Setup > Debug Logs)",
    );
  }
  return pass("traceflags", `${count} active TraceFlag(s)`);
}
