// One category, one source (spec A §10): the same activity reaches us as a stream, a stored object
// and an ELF type; ingesting two of them double-counts. A pure check over one org's sources config.
import { ConfigError } from "../errors.ts";
import { eventTypeOf, filterTopics, hasWildcard, WILDCARD } from "./pubsub/topics.ts";

const SUFFIXES = ["EventStream", "EventStore", "Event"];
/** New exceptions go in this one table. */
const ALIASES: Readonly<Record<string, string>> = { loginhistory: "login" };

function alias(c: string): string {
  return ALIASES[c] ?? c;
}

function stripSuffix(name: string): string {
  for (const s of SUFFIXES) {
    if (name.endsWith(s) && name.length > s.length) return name.slice(0, -s.length);
  }
  return name;
}

/** `/event/LoginEventStream` → `login`, `/data/AccountChangeEvent` → `accountchange`. */
export function categoryOfTopic(topic: string): string {
  return alias(stripSuffix(eventTypeOf(topic)).toLowerCase());
}

/** `ApiAnomalyEventStore` → `apianomaly`, `LoginHistory` → `login`. */
export function categoryOfObject(name: string): string {
  return alias(stripSuffix(name).toLowerCase());
}

/** `Login As` → `loginas`; ELF types get no suffix strip. */
export function categoryOfElfType(type: string): string {
  return alias(type.toLowerCase().replace(/\s+/g, ""));
}

/** The parts of one org's `sources:` block the guard reads (snake_case as in the YAML). */
export interface OverlapSourcesConfig {
  allow_overlap?: boolean;
  pubsub?: {
    enabled?: boolean;
    topics?: readonly string[];
    include?: readonly string[];
    exclude?: readonly string[];
    managed_subscriptions?: readonly { topic: string }[];
  };
  eventlog_objects?: { enabled?: boolean; objects?: readonly { name: string }[] };
  eventlogfile?: {
    enabled?: boolean;
    event_types?: readonly (string | { name: string })[];
    exclude?: readonly string[];
  };
}

export class OverlapError extends ConfigError {}

function explicitTopics(cfg: OverlapSourcesConfig): string[] {
  const p = cfg.pubsub;
  if (!p || p.enabled === false) return [];
  return [
    ...filterTopics(p.topics ?? [], { include: p.include ?? [WILDCARD], exclude: p.exclude ?? [] }),
    ...(p.managed_subscriptions ?? []).map((m) => m.topic),
  ];
}

function storedObjects(cfg: OverlapSourcesConfig): string[] {
  const o = cfg.eventlog_objects;
  return o?.enabled ? (o.objects ?? []).map((x) => x.name) : [];
}

function elfTypes(cfg: OverlapSourcesConfig): string[] {
  const e = cfg.eventlogfile;
  if (!e?.enabled) return [];
  return (e.event_types ?? []).map((t) => (typeof t === "string" ? t : t.name)).filter((t) => t !== WILDCARD);
}

/**
 * Throws OverlapError when two distinct sources of one org feed the same category, or when both
 * Pub/Sub and ELF use `*` (#91; an ELF `exclude` counts as a deliberate carve-out).
 */
export function checkOverlap(cfg: OverlapSourcesConfig, orgName = ""): void {
  if (cfg.allow_overlap) return;
  const where = orgName ? ` in org '${orgName}'` : "";
  const remedy = "ingest each category from one source only, or set sources.allow_overlap: true";
  const buckets = new Map<string, Map<string, string[]>>();
  const add = (category: string, source: string, id: string): void => {
    const bySource = buckets.get(category) ?? new Map<string, string[]>();
    bySource.set(source, [...(bySource.get(source) ?? []), id]);
    buckets.set(category, bySource);
  };
  for (const t of explicitTopics(cfg)) add(categoryOfTopic(t), "pubsub", t);
  for (const o of storedObjects(cfg)) add(categoryOfObject(o), "eventlog_objects", o);
  for (const t of elfTypes(cfg)) add(categoryOfElfType(t), "eventlogfile", t);
  const collisions: string[] = [];
  for (const [category, bySource] of [...buckets].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (bySource.size < 2) continue;
    const pairs = [...bySource].flatMap(([src, ids]) => ids.map((id) => `${src}=${id}`)).sort();
    collisions.push(`${category} (${pairs.join(", ")})`);
  }
  if (collisions.length > 0) {
    throw new OverlapError(`sources overlap${where}: ${collisions.join("; ")}; ${remedy}`);
  }
  const p = cfg.pubsub;
  const e = cfg.eventlogfile;
  // The loaded config holds `{name: "*"}` objects, a hand-written one may hold the bare string.
  const elfWildcard =
    e?.enabled === true &&
    (e.event_types ?? []).some((t) => (typeof t === "string" ? t : t.name) === WILDCARD);
  if (
    p &&
    p.enabled !== false &&
    hasWildcard(p.topics ?? []) &&
    elfWildcard &&
    (e.exclude ?? []).length === 0
  ) {
    throw new OverlapError(
      `sources overlap${where}: pubsub.topics and eventlogfile.event_types both contain "*", so login, logout, api, report and uri activity would be ingested twice; list explicit topics or types, add an eventlogfile.exclude, or set sources.allow_overlap: true`,
    );
  }
}

/**
 * Categories that wildcard discovery of `forSource` must skip: those of the *explicit* identifiers of
 * the org's other enabled sources (#15). Empty under allow_overlap.
 */
export function ownedCategories(
  cfg: OverlapSourcesConfig,
  forSource: "pubsub" | "eventlogfile",
): Set<string> {
  const owned = new Set<string>();
  if (cfg.allow_overlap) return owned;
  for (const o of storedObjects(cfg)) owned.add(categoryOfObject(o));
  if (forSource === "pubsub") for (const t of elfTypes(cfg)) owned.add(categoryOfElfType(t));
  else for (const t of explicitTopics(cfg)) owned.add(categoryOfTopic(t));
  return owned;
}
