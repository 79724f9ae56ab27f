// Which keep rate applies to a topic (§5.3); the keep decision itself is the shared shouldKeep.
import { fnmatchcase } from "../../util/glob.ts";

/** The rate of the first glob (map order) matching the topic, 1.0 when none does. */
export function sampleRateFor(topic: string, sample: Readonly<Record<string, number>>): number {
  for (const [glob, rate] of Object.entries(sample)) {
    if (fnmatchcase(topic, glob)) return rate;
  }
  return 1;
}
