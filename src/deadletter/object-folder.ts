// What the dead-letter store needs from S3, GCS or Azure: the objects under one prefix (name and size),
// and whole-object read, write and delete. Unlike the checkpoint document there is no compare-and-swap:
// every group gets a new object name, so writers never overwrite each other.

export interface FolderObject {
  /** The name below the folder's prefix. */
  name: string;
  bytes: number;
}

export interface ObjectFolder {
  /** `s3://bucket/prefix/`, `gs://...`, `azure://account/container/prefix/`. */
  readonly location: string;
  list(signal: AbortSignal): Promise<FolderObject[]>;
  /** Undefined when the object is gone (evicted or purged meanwhile). */
  get(name: string, signal: AbortSignal): Promise<Uint8Array | undefined>;
  put(name: string, bytes: Uint8Array, signal: AbortSignal): Promise<void>;
  /** Deleting an object that is already gone is not an error. */
  delete(name: string, signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** `sf2loki/state.json` → `sf2loki/state-deadletter/`: next to the checkpoint object, never under it. */
export function deadLetterPrefix(checkpointKey: string): string {
  const slash = checkpointKey.lastIndexOf("/");
  const dir = slash < 0 ? "" : checkpointKey.slice(0, slash + 1);
  const file = checkpointKey.slice(slash + 1);
  const dot = file.lastIndexOf(".");
  const stem = dot > 0 ? file.slice(0, dot) : file;
  return `${dir}${stem}-deadletter/`;
}
