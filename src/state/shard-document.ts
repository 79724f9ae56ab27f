// Under coordinate.sharding every org (shard) has its own checkpoint document with its own
// `__fence_epoch__`, so fencing one shard never blocks another and two replicas never CAS-fight over
// one document: the configured path, key, object or blob with `-<org>` before its extension
// (`state.json` -> `state-acme.json`). A shard document that holds nothing yet is seeded from that
// org's keys in the shared document, which is only ever read, never changed or deleted.
import { orgPrefix } from "./org-view.ts";
import type { StateSettings } from "./settings.ts";
import { RESERVED_KEYS } from "./document.ts";

/** `dir/state.json` -> `dir/state-acme.json`; `dir/state` -> `dir/state-acme`. */
export function shardPath(path: string, shard: string): string {
  const slash = path.lastIndexOf("/");
  const dot = path.lastIndexOf(".");
  if (dot <= slash + 1) return `${path}-${shard}`;
  return `${path.slice(0, dot)}-${shard}${path.slice(dot)}`;
}

/** The `state:` block of one shard: the same backend, its own document. */
export function shardStateSettings<T extends StateSettings>(state: T, shard: string): T {
  return {
    ...state,
    file: { ...state.file, path: shardPath(state.file.path, shard) },
    s3: { ...state.s3, key: shardPath(state.s3.key, shard) },
    gcs: { ...state.gcs, object_name: shardPath(state.gcs.object_name, shard) },
    ...(state.azure ? { azure: { ...state.azure, blob_name: shardPath(state.azure.blob_name, shard) } } : {}),
  };
}

/**
 * The keys a new shard document starts from: the org's own (`org=<name>:...`, kept prefixed, as the
 * shard's org view reads them), plus, for the org that reads legacy keys (the first, or the single
 * org), the unprefixed keys a single-org deployment wrote. Reserved keys and `skip` (the process-wide
 * egress budget) stay behind.
 */
export function shardSeed(
  shared: Readonly<Record<string, string>>,
  org: string,
  legacyFallback: boolean,
  skip: ReadonlySet<string> = new Set(),
): Record<string, string> {
  const prefix = org === "" ? undefined : orgPrefix(org);
  const seed: Record<string, string> = {};
  for (const [key, value] of Object.entries(shared)) {
    if (RESERVED_KEYS.has(key) || skip.has(key)) continue;
    const own = prefix !== undefined && key.startsWith(prefix);
    const legacy = legacyFallback && !key.startsWith("org=");
    if (own || legacy) seed[key] = value;
  }
  return seed;
}
