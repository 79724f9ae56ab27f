// `limits`: the org's daily API budget, read with the daemon's REST client and limits parser.
import { describeError } from "../../errors.ts";
import { parseLimits } from "../../salesforce/limits.ts";
import { fail, pass, warn, type CheckRow, type OrgUnderCheck } from "../check.ts";

const LOW_FRACTION = 0.2;

export async function checkLimits(org: OrgUnderCheck, signal: AbortSignal): Promise<CheckRow> {
  const { rest } = org.wiring;
  let body: Record<string, unknown>;
  try {
    body = await rest.getJson(rest.path("limits"), { signal, where: "the org limits", api: "limits" });
  } catch (err) {
    return fail("limits", `reading /limits failed: ${describeError(err)}`);
  }
  const daily = parseLimits(body).get("DailyApiRequests");
  if (!daily) return warn("limits", "DailyApiRequests is missing from /limits");
  const text = `DailyApiRequests ${daily.remaining}/${daily.max} remaining`;
  if (daily.max > 0 && daily.remaining / daily.max < LOW_FRACTION) {
    return warn(
      "limits",
      `${text} (< 20% remaining): polling may be throttled; lower poll rates or raise the org's API allocation`,
    );
  }
  return pass("limits", text);
}
