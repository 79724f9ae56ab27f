// The two simulated orgs the multi-org app tests run against ("prod" and "emea", each its own org id
// and the demo client secret), stopped at the end of the test.
import type { TestContext } from "node:test";
import { DEMO_SECRET } from "../../src/sim/demo-world.ts";
import { startSimOrg, type SimOrg, type SimOrgOptions } from "../../src/sim/salesforce/index.ts";

export type TwoOrgs = Record<"prod" | "emea", SimOrg>;

export async function startTwoOrgs(
  t: TestContext,
  opts: Omit<SimOrgOptions, "orgId" | "clientSecret">,
): Promise<TwoOrgs> {
  const orgs = {} as TwoOrgs;
  for (const [name, orgId] of [
    ["prod", "00DSIMPROD0000001A"],
    ["emea", "00DSIMEMEA0000001A"],
  ] as const) {
    const org = await startSimOrg({ orgId, clientSecret: DEMO_SECRET, ...opts });
    orgs[name] = org;
    t.after(() => org.stop());
  }
  return orgs;
}
