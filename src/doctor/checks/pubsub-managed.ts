// `pubsub_managed`: each managed subscription the config streams exists in the org, runs, and carries
// the topic the config expects, read from its ManagedEventSubscription record (Tooling API).
import { describeError } from "../../errors.ts";
import {
  ManagedLookupError,
  describeRef,
  lookupManagedSubscription,
} from "../../salesforce/pubsub/managed-lookup.ts";
import { nameOf, refOf } from "../../sources/pubsub/managed.ts";
import type { ManagedSubscriptionSetting } from "../../sources/pubsub/settings.ts";
import { fail, pass, skip, type CheckRow, type OrgUnderCheck } from "../check.ts";

export async function checkManagedSubscriptions(
  org: OrgUnderCheck,
  signal: AbortSignal,
): Promise<CheckRow[]> {
  const s = org.wiring.org.sources.pubsub;
  const managed = s.managed_subscriptions;
  if (!s.enabled || managed.length === 0)
    return [skip("pubsub_managed", "no sources.pubsub.managed_subscriptions")];
  const rows: CheckRow[] = [];
  for (const m of managed) rows.push(await checkOne(org, m, signal));
  return rows;
}

async function checkOne(
  org: OrgUnderCheck,
  m: ManagedSubscriptionSetting,
  signal: AbortSignal,
): Promise<CheckRow> {
  const name = `pubsub_managed:${nameOf(m)}`;
  const ref = refOf(m);
  try {
    const found = await lookupManagedSubscription(
      org.wiring.auth,
      org.wiring.org.salesforce.api_version,
      ref,
      signal,
    );
    if (!found)
      return fail(
        name,
        `no ManagedEventSubscription ${describeRef(ref)} in the org: create it (docs/pubsub.md, "Managed subscriptions") or correct sources.pubsub.managed_subscriptions`,
      );
    if (found.topic !== m.topic)
      return fail(
        name,
        `it carries ${found.topic}, but the config says ${m.topic}: correct the config's topic or the subscription's topicName (the daemon does not stream it until they agree)`,
      );
    if (found.state !== "RUN")
      return fail(
        name,
        `it is in state ${found.state}: set it to RUN (Tooling API or Metadata API); a stopped subscription serves no subscriber and has lost its committed replay`,
      );
    return pass(
      name,
      `${found.developerName} (id ${found.id}) carries ${found.topic}, state RUN, defaultReplay ${found.defaultReplay}, errorRecoveryReplay ${found.errorRecoveryReplay}`,
    );
  } catch (err) {
    const status = err instanceof ManagedLookupError ? err.status : undefined;
    const hint =
      status === 403 || status === 401
        ? "; reading ManagedEventSubscription needs the View Setup and Configuration permission"
        : status === 400 || status === 404
          ? "; managed subscriptions are a Pub/Sub API beta from API version 60.0: check salesforce.api_version"
          : "";
    return fail(name, `${describeError(err)}${hint}`);
  }
}
