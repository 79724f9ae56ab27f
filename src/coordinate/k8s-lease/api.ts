// The three Lease calls the coordinator makes, as a narrow adapter over CoordinationV1Api, speaking
// the Lease's JSON shape. Nothing here loads the Kubernetes client: that happens only when a k8s_lease
// coordinator actually runs (client.ts).

/** A coordination.k8s.io/v1 Lease, as much of it as we read or carry through a replace. */
export interface LeaseObject {
  metadata: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number | null;
    leaseTransitions?: number | null;
    /** MicroTime, RFC 3339 with six fractional digits. */
    renewTime?: string | null;
    acquireTime?: string | null;
    preferredHolder?: string | null;
    strategy?: string | null;
  };
}

export interface LeaseApi {
  read(signal: AbortSignal): Promise<LeaseObject>;
  /** `dryRun`: the server validates and authorises the call but persists nothing (`sf2loki doctor`). */
  create(body: LeaseObject, signal: AbortSignal, opts?: { dryRun?: boolean }): Promise<LeaseObject>;
  /** PUT with `body.metadata.resourceVersion` as the precondition: 409 when it moved. */
  replace(body: LeaseObject, signal: AbortSignal, opts?: { dryRun?: boolean }): Promise<LeaseObject>;
}

/** Lists the namespace's Leases by label selector (sharding's membership leases; RBAC verb `list`). */
export interface LeaseListApi {
  list(labelSelector: string, signal: AbortSignal): Promise<LeaseObject[]>;
  /** DELETE with a resourceVersion precondition (409 when it moved). RBAC verb `delete`. */
  remove(name: string, resourceVersion: string, signal: AbortSignal): Promise<void>;
}

/** The HTTP status of a failed API call (ApiException.code), if it got that far. */
export function apiStatus(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "number" ? code : undefined;
}

/** One line for an API failure: the status and the server's Status message, not the whole exception dump. */
export function describeApiError(err: unknown): string {
  const status = apiStatus(err);
  if (status === undefined) return err instanceof Error ? err.message : String(err);
  const body = (err as { body?: unknown }).body;
  let message: unknown;
  if (typeof body === "string") {
    try {
      message = (JSON.parse(body) as { message?: unknown }).message;
    } catch {
      message = body.slice(0, 200);
    }
  } else if (typeof body === "object" && body !== null) {
    message = (body as { message?: unknown }).message;
  }
  return typeof message === "string" && message !== "" ? `HTTP ${status}: ${message}` : `HTTP ${status}`;
}
