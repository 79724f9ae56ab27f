// `transforms`: a hash rule without a salt is a dictionary-attackable pseudonym; say so before it ships.
import { resolvedOrgs } from "../../config/orgs.ts";
import type { Config } from "../../config/schema.ts";
import { pass, skip, warn, type CheckRow } from "../check.ts";

const SOURCES = ["pubsub", "eventlog_objects", "eventlogfile", "apexlog"] as const;

export function checkTransforms(config: Config): CheckRow {
  const hashRules: string[] = [];
  const unsalted: string[] = [];
  for (const org of resolvedOrgs(config)) {
    const where = org.name === "" ? "sources" : `orgs[${org.name}].sources`;
    const salted = (org.sources.transform_salt ?? "") !== "";
    for (const source of SOURCES) {
      const rules = org.sources[source].transforms;
      rules.forEach((rule, i) => {
        if (rule.action !== "hash") return;
        const name = `${where}.${source}.transforms[${i}]`;
        hashRules.push(name);
        if (!salted) unsalted.push(name);
      });
    }
  }
  if (hashRules.length === 0) return skip("transforms", "no hash rules");
  if (unsalted.length > 0) {
    return warn(
      "transforms",
      `hash rule(s) without a salt: ${unsalted.join(", ")}; set sources.transform_salt_file so hashed values cannot be reversed by a dictionary`,
    );
  }
  return pass("transforms", `${hashRules.length} hash rule(s), all salted`);
}
