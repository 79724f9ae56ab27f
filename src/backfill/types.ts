// Which EventTypes a backfill loads: --event-types as given (`*` discovers), else the configured
// explicit types, else discovery for the interval. A configured type keeps its per-type labels,
// structured metadata and sampling; a type named only on the command line gets the defaults.
import { describeError } from "../errors.ts";
import type { EventLogFileClient } from "../salesforce/eventlogfile/client.ts";
import type { EventLogFileSettings, EventLogFileTypeSettings } from "../sources/eventlogfile/settings.ts";
import type { BackfillContext } from "./context.ts";

export async function resolveTypes(
  c: BackfillContext,
  client: EventLogFileClient,
  elf: EventLogFileSettings,
  signal: AbortSignal,
): Promise<EventLogFileTypeSettings[]> {
  const configured = new Map(elf.event_types.map((t) => [t.name, t]));
  const settingsOf = (name: string): EventLogFileTypeSettings =>
    configured.get(name) ?? { name, structured_metadata_fields: null, labels: [], sample: 1 };
  let names = c.plan.eventTypes ?? [];
  if (c.plan.eventTypes === undefined && !c.plan.discover) {
    names = elf.event_types.map((t) => t.name).filter((n) => n !== "*");
  }
  if (names.length === 0 || c.plan.discover) {
    try {
      const found = await client.discover(c.plan.interval, signal);
      const excluded = new Set(elf.exclude);
      names = [...new Set([...names, ...found.filter((n) => !excluded.has(n))])];
    } catch (err) {
      c.report(
        `EventLogFile type discovery failed (${describeError(err)}); name the types with --event-types`,
      );
      return [];
    }
  }
  return names.map(settingsOf);
}
