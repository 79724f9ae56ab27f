// The daemon's memory model (docs/capacity.md): peak RSS as a function of the config, so an operator
// can size a pod's memory limit from the numbers they set. Every term is a bound the code enforces
// (queue entries and bytes, batch size, the commit window, the sources' buffers) times what such
// data costs in memory, plus the V8 young generation and heap growth the daemon's flags allow
// (src/v8-flags.ts), plus a measured baseline. The stalled-Loki test holds a running daemon to it.
import { pubsubActive, streamedTopics } from "./sources/pubsub/settings.ts";
import type { Config } from "./config/schema.ts";
import { resolvedOrgs } from "./config/orgs.ts";
import { BATCH_MAX_BYTES as ELF_BATCH_BYTES } from "./salesforce/eventlogfile/csv-rows.ts";

const MIB = 2 ** 20;

/**
 * RSS of an idle daemon started from the compiled build with the daemon's V8 flags and environment:
 * Node itself (42 MiB for `node -e ""`), the modules a file-store config loads (zod, yaml, undici's
 * dispatchers, pino, commander, the OpenTelemetry SDK), the code V8 compiled for them and Node's own
 * pages they touch. Measured with `node bench/startup-rss.ts --dist` (105.7 and 106.7 MiB), rounded up.
 */
export const BASELINE_MIB = 108;
/**
 * Libraries a config loads on first use (RSS of importing each into a bare Node, rounded up): the
 * baseline config needs none of them.
 */
export const MODULE_MIB = {
  pubsub: 25, // @grpc/grpc-js, @grpc/proto-loader, avsc
  s3: 36, // @aws-sdk/client-s3
  gcs: 37, // @google-cloud/storage
  azure: 42, // @azure/storage-blob (+ @azure/identity with credential: default)
  k8s: 86, // @kubernetes/client-node
  otlp: 10, // @opentelemetry/exporter-metrics-otlp-proto over the SDK already loaded
} as const;
/**
 * Node's TypeScript stripper and the larger sources, when the daemon runs from a source checkout
 * (bin/sf2loki.js): `startup-rss` idle 125.0 MiB from sources against 106.2 from dist/, rounded up.
 */
export const TYPE_STRIPPING_MIB = 20;
/** The young generation: two semi-spaces of --max-semi-space-size=8. */
export const YOUNG_GENERATION_MIB = 16;
/** --heap-growing-percent=50: the old generation grows to live x 1.5 before the next full GC. */
export const HEAP_GROWTH = 1.5;
/**
 * Heap bytes per byte of queue cost (spec B §2.5: line bytes + 64 + labels + metadata + checkpoint):
 * the line as a V8 string (two bytes a character once it holds any non-Latin-1 character), the entry
 * object, its BigInt timestamp and metadata object. 2 covers the two-byte case.
 */
export const HEAP_PER_COST_BYTE = 2;
/** Batches of rows the ELF source buffers between its workers and the pipeline (BRIDGE_CAPACITY). */
const ELF_BRIDGE_CHUNKS = 2;
/** Entries the Pub/Sub bridge holds per org (BRIDGE_MAX_ENTRIES). */
const PUBSUB_BRIDGE_ENTRIES = 1000;
/** Records in one SOQL page (Salesforce's default batch for a query). */
const SOQL_PAGE_RECORDS = 2000;
/**
 * Heap per cached user of `enrich.users` (Map entry, its five fields as parsed strings, the 18-char
 * key), plus its share of the waiting-id set: 361 B measured for 20 000 users with 30-character
 * usernames (node --expose-gc, heapUsed after a full GC); rounded up for longer names.
 */
export const ENRICH_USER_HEAP_BYTES = 500;

export interface MemoryModelOptions {
  /**
   * Typical queue cost of one entry in bytes (line + 64 + labels + metadata + checkpoint): ~1 KiB
   * for EventLogFile rows and most Pub/Sub events. The queue byte budgets cap the worst case anyway.
   */
  entryBytes?: number;
  /** The daemon runs from TypeScript sources (adds TYPE_STRIPPING_MIB). */
  fromSource?: boolean;
}

/** Each term in MiB; `total_mib` is the predicted peak RSS. */
export interface MemoryModel {
  baseline_mib: number;
  /** Libraries the config loads on use (MODULE_MIB), by name. */
  modules_mib: number;
  young_generation_mib: number;
  /** Live data the bounds allow: queues, batches, the commit window and the sources' buffers. */
  live_mib: number;
  /** live x HEAP_GROWTH: the old generation's size at its peak between two full GCs. */
  old_generation_mib: number;
  /** Encoded push bodies (protobuf and snappy output) outside the JS heap. */
  external_mib: number;
  total_mib: number;
  /** live_mib by where it sits. */
  live_by_part: Record<string, number>;
}

export function memoryModel(config: Config, opts: MemoryModelOptions = {}): MemoryModel {
  const entry = opts.entryBytes ?? 1024;
  const b = config.sink.loki.batch;
  const orgs = resolvedOrgs(config);
  const parts: Record<string, number> = {};
  const add = (part: string, bytes: number): void => {
    parts[part] = (parts[part] ?? 0) + bytes * HEAP_PER_COST_BYTE;
  };

  const streaming = orgs.some((o) => pubsubActive(o.sources.pubsub));
  const bulk = orgs.some(
    (o) => o.sources.eventlogfile.enabled || o.sources.eventlog_objects.enabled || o.sources.apexlog.enabled,
  );
  const lanes = (streaming ? 1 : 0) + (bulk ? 1 : 0);
  // A lane's queue stops at whichever bound binds first; one entry may overshoot the byte budget.
  const byEntries = b.queue_maxsize * entry;
  const queue = b.queue_max_bytes > 0 ? Math.min(byEntries, b.queue_max_bytes + entry) : byEntries;
  // A batch closes at max_entries or once max_bytes is reached (the entry that crosses it included).
  const batch = Math.min(b.max_entries * entry, b.max_bytes + entry);
  add("lane queues", lanes * queue);
  // Alive per lane: max_in_flight batches in the commit window, one waiting for a slot, one building.
  add("batches", lanes * (b.max_in_flight + 2) * batch);
  // Each push in flight holds its body until the response: two batches' worth bounds every format
  // (snappy output plus the one protobuf scratch buffer per process; JSON; gzip's input and output).
  const external = lanes * b.max_in_flight * 2 * batch;

  for (const org of orgs) {
    const s = org.sources;
    if (pubsubActive(s.pubsub)) {
      const bridge = PUBSUB_BRIDGE_ENTRIES * entry;
      add(
        "pubsub bridge",
        s.pubsub.bridge_max_bytes > 0 ? Math.min(bridge, s.pubsub.bridge_max_bytes) : bridge,
      );
      // Flow-control credit: events the server may send per topic before the next fetch.
      add("pubsub credit", streamedTopics(s.pubsub).length * s.pubsub.default_num_requested * entry);
    }
    if (s.eventlogfile.enabled) {
      // Each download worker holds one batch (<= 64 KiB of CSV) as rows and entries; the bridge two more.
      add("eventlogfile", (s.eventlogfile.concurrency + ELF_BRIDGE_CHUNKS) * ELF_BATCH_BYTES * 2);
    }
    if (s.eventlog_objects.enabled) add("eventlog_objects", SOQL_PAGE_RECORDS * entry * 2);
    // One body at a time, as received bytes and as the decoded string.
    if (s.apexlog.enabled) add("apexlog", s.apexlog.max_body_bytes * 2);
  }

  const users = config.enrich.users;
  // Heap bytes already, not queue cost: no HEAP_PER_COST_BYTE.
  if (users.enabled) parts["enrich.users"] = orgs.length * users.max_users * ENRICH_USER_HEAP_BYTES;

  const modules = loadedModules(config);
  const modulesMib = modules.reduce((n, m) => n + MODULE_MIB[m], 0);
  const live = Object.values(parts).reduce((n, v) => n + v, 0);
  const baseline = BASELINE_MIB + (opts.fromSource ? TYPE_STRIPPING_MIB : 0);
  const round = (bytes: number): number => Math.round((bytes / MIB) * 10) / 10;
  const total = baseline + modulesMib + YOUNG_GENERATION_MIB + round(live * HEAP_GROWTH) + round(external);
  return {
    baseline_mib: baseline,
    modules_mib: modulesMib,
    young_generation_mib: YOUNG_GENERATION_MIB,
    live_mib: round(live),
    old_generation_mib: round(live * HEAP_GROWTH),
    external_mib: round(external),
    total_mib: Math.round(total * 10) / 10,
    live_by_part: Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, round(v)])),
  };
}

function loadedModules(config: Config): (keyof typeof MODULE_MIB)[] {
  const out = new Set<keyof typeof MODULE_MIB>();
  if (resolvedOrgs(config).some((o) => pubsubActive(o.sources.pubsub))) {
    out.add("pubsub");
  }
  const store = config.state.store;
  if (store === "s3" || store === "gcs" || store === "azure") out.add(store);
  const lease = config.coordinate.type;
  if (lease === "s3_lease") out.add("s3");
  if (lease === "gcs_lease") out.add("gcs");
  if (lease === "azure_lease") out.add("azure");
  if (lease === "k8s_lease") out.add("k8s");
  if (config.service.telemetry.enabled) out.add("otlp");
  return [...out];
}
