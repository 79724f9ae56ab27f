// Where backfill checkpoints live: the configured backend (file, S3 or GCS, same directory or bucket,
// same credentials) at a derived target, `<stem>-backfill<ext>` (`state.json` → `state-backfill.json`,
// the Python backfill's own file name, so its progress is picked up). Not the daemon's document: the
// stores write the whole document under compare-and-swap, so two writers of one document make each
// other's commits conflicts (the daemon ends its run on a second writer, and under noop the file lock
// would keep backfill out while the daemon runs). Apart, both run at once and neither waits.
import type { Clock } from "../util/clock.ts";
import { buildStore } from "../state/build.ts";
import type { StateSettings } from "../state/settings.ts";
import type { CheckpointStore } from "../state/store.ts";

/** `dir/state.json` → `dir/state-backfill.json`; no extension: `-backfill` appended. */
export function backfillTarget(path: string): string {
  return path.replace(/(\.[^./]*)?$/, (ext) => `-backfill${ext}`);
}

export function backfillStateSettings(state: StateSettings): StateSettings {
  return {
    ...state,
    file: { ...state.file, path: backfillTarget(state.file.path) },
    s3: { ...state.s3, key: backfillTarget(state.s3.key) },
    gcs: { ...state.gcs, object_name: backfillTarget(state.gcs.object_name) },
  };
}

/**
 * The backfill's store: the file one takes its own lock (two backfills of one config collide with a
 * clear message); no fence, no lease, whatever the coordinator: only backfill writes this document.
 */
export function buildBackfillStore(state: StateSettings, clock: Clock): CheckpointStore {
  return buildStore(backfillStateSettings(state), { exclusiveLock: true, clock });
}
