// The verdict on every Azure Blob failure, for the shared engine. Azure answers a conditional upload
// that lost with 412 ConditionNotMet, except that `If-None-Match: *` over an existing blob is
// 409 BlobAlreadyExists: both mean "not the version you named". Other 409s (a write colliding with
// another operation on the blob) and a blob lease someone else holds are retried like S3's 409.
import { isRestError } from "@azure/storage-blob";
import type { ErrorClass } from "../object-backend.ts";
import { isMissingBucket, isNetworkError, isTransientStatus } from "../transient.ts";

/** Azure's error codes for a blob lease held by another client (never taken by sf2loki itself). */
const LEASED = new Set(["LeaseIdMissing", "LeaseIdMismatchWithBlobOperation", "LeaseAlreadyPresent"]);

/** Names a socket failure reported with no status (core-rest-pipeline wraps the socket error this way). */
const SEND_ERROR = "REQUEST_SEND_ERROR";

export function classifyAzureError(err: unknown): ErrorClass {
  const { status, code } = azureErrorOf(err);
  if (code !== undefined && LEASED.has(code)) return "concurrent-conflict";
  if (status === 412) return "precondition-failed";
  if (status === 409) return code === "BlobAlreadyExists" ? "precondition-failed" : "concurrent-conflict";
  // An If-Match upload to a blob someone deleted: the blob moved away from our version, as with a 412.
  if (status === 404 && code === "BlobNotFound") return "precondition-failed";
  if (isMissingBucket(err)) return "missing-scope";
  if (status === 401 || status === 403) return "access-denied";
  if (isTransientStatus(status) || code === SEND_ERROR || isNetworkError(err)) return "transient";
  return "other";
}

/** The blob itself is absent (not its container: that one is a misconfiguration, surfaced as is). */
export function isBlobNotFound(err: unknown): boolean {
  const { status, code } = azureErrorOf(err);
  return status === 404 && code !== "ContainerNotFound";
}

function azureErrorOf(err: unknown): { status: number | undefined; code: string | undefined } {
  if (!isRestError(err)) return { status: undefined, code: undefined };
  return { status: err.statusCode, code: err.code };
}
