// The lease as a coordination.k8s.io/v1 Lease. The API server's resourceVersion precondition is a real
// compare-and-swap: a 409 is the race signal, so no confirm read is needed.
import { LeaseUnreadableError } from "../errors.ts";
import type { LeaseBackend, LeaseRecord, LeaseSnapshot, LeaseWriteResult } from "../lease/backend.ts";
import { apiStatus, describeApiError, type LeaseApi, type LeaseObject } from "./api.ts";
import { leaseBody, leaseSnapshot } from "./mapping.ts";

export interface K8sLeaseBackendOptions {
  namespace: string;
  name: string;
  /** Opens the API client; called at the top of `run`, so building the coordinator stays offline. */
  connect: () => Promise<LeaseApi>;
  /** Set on every write (sharding labels its Leases so one list by selector finds them). */
  labels?: Record<string, string>;
}

export class K8sLeaseBackend implements LeaseBackend {
  readonly kind = "k8s_lease";
  readonly where: string;
  readonly confirmDelayMs = 0;
  readonly #namespace: string;
  readonly #name: string;
  readonly #connect: () => Promise<LeaseApi>;
  readonly #labels: Record<string, string> | undefined;
  #api: LeaseApi | undefined;
  /** The Lease as last read or written, so a replace keeps the fields we do not own. */
  #last: LeaseObject | undefined;

  constructor(opts: K8sLeaseBackendOptions) {
    this.#namespace = opts.namespace;
    this.#name = opts.name;
    this.#connect = opts.connect;
    this.#labels = opts.labels;
    this.where = `${opts.namespace}/${opts.name}`;
  }

  async open(): Promise<void> {
    this.#api = await this.#connect();
  }

  close(): Promise<void> {
    this.#api = undefined;
    return Promise.resolve();
  }

  async read(signal: AbortSignal): Promise<LeaseSnapshot | undefined> {
    try {
      return this.#remember(await this.#client().read(signal));
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      if (err instanceof LeaseUnreadableError) throw err;
      throw new LeaseUnreadableError(this.where, describeApiError(err), { cause: err });
    }
  }

  async write(
    record: LeaseRecord,
    expected: string | undefined,
    signal: AbortSignal,
  ): Promise<LeaseWriteResult> {
    const base =
      expected !== undefined && this.#last?.metadata.resourceVersion === expected ? this.#last : undefined;
    const body = leaseBody(record, this.#name, this.#namespace, expected, base);
    if (this.#labels) body.metadata.labels = { ...body.metadata.labels, ...this.#labels };
    try {
      const api = this.#client();
      const lease = expected === undefined ? await api.create(body, signal) : await api.replace(body, signal);
      return { ok: true, version: this.#remember(lease).version };
    } catch (err) {
      const status = apiStatus(err);
      // 409: the version moved (or the create lost its race); 404 on replace: the Lease was deleted.
      if (status === 409 || (status === 404 && expected !== undefined)) return { ok: false };
      if (status === undefined) throw err;
      throw new Error(`writing Lease ${this.where} failed: ${describeApiError(err)}`, { cause: err });
    }
  }

  #remember(lease: LeaseObject): LeaseSnapshot {
    const snap = leaseSnapshot(lease, this.where);
    this.#last = lease;
    return snap;
  }

  #client(): LeaseApi {
    if (!this.#api) throw new Error(`the Kubernetes client for Lease ${this.where} is not open`);
    return this.#api;
  }
}
