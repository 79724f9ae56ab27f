// A managed subscription's record, read from the Tooling API (ManagedEventSubscription, beta): which
// topic it carries and whether it runs. The source checks it before it subscribes, doctor shows it.
// Reading it needs the View Setup and Configuration permission; creating one, Customize Application.
import type { TokenSource } from "../auth.ts";
import { clip } from "../auth-http.ts";
import { getOnInstance } from "../instance-get.ts";
import { soqlString } from "../soql-literals.ts";
import { Sf2LokiError } from "../../errors.ts";
import type { Dispatcher } from "../../util/http-dispatchers.ts";

/** How the config names a subscription: its Tooling API record id, or its developer name. */
export type ManagedRef = { id: string } | { developerName: string };

export interface ManagedSubscriptionInfo {
  id: string;
  developerName: string;
  topic: string;
  /** RUN, or STOP (no subscriber is served, and the committed replay was deleted). */
  state: string;
  defaultReplay: string;
  errorRecoveryReplay: string;
}

export class ManagedLookupError extends Sf2LokiError {
  /** The HTTP status Salesforce answered with; undefined when it never answered. */
  readonly status: number | undefined;
  constructor(message: string, status: number | undefined, options?: { cause?: unknown }) {
    super("SF2LOKI_PUBSUB_MANAGED_LOOKUP", message, options);
    this.status = status;
  }
}

export function describeRef(ref: ManagedRef): string {
  return "id" in ref ? `id ${ref.id}` : ref.developerName;
}

/** The record, or undefined when the org has none by that id or name. */
export async function lookupManagedSubscription(
  auth: TokenSource,
  apiVersion: string,
  ref: ManagedRef,
  signal?: AbortSignal,
  http?: Dispatcher,
): Promise<ManagedSubscriptionInfo | undefined> {
  const where =
    "id" in ref ? `Id = ${soqlString(ref.id)}` : `DeveloperName = ${soqlString(ref.developerName)}`;
  // The Tooling API returns Metadata only for a query that can match one row.
  const soql = `SELECT Id, DeveloperName, Metadata FROM ManagedEventSubscription WHERE ${where} LIMIT 1`;
  const { res } = await getOnInstance(
    auth,
    `/services/data/v${apiVersion}/tooling/query?q=${encodeURIComponent(soql)}`,
    signal,
    http,
  );
  if (res.status < 200 || res.status >= 300) {
    throw new ManagedLookupError(
      `the Tooling API query for ManagedEventSubscription ${describeRef(ref)} failed: HTTP ${res.status} — ${clip(res.body, 200)}`,
      res.status,
    );
  }
  let row: Record<string, unknown> | undefined;
  try {
    row = (JSON.parse(res.body) as { records?: Record<string, unknown>[] }).records?.[0];
  } catch (err) {
    throw new ManagedLookupError(
      `the Tooling API query for ManagedEventSubscription ${describeRef(ref)} returned non-JSON: ${clip(res.body, 200)}`,
      res.status,
      { cause: err },
    );
  }
  if (!row) return undefined;
  const meta = (row.Metadata ?? {}) as Record<string, unknown>;
  const text = (v: unknown): string => (typeof v === "string" ? v : "");
  return {
    id: text(row.Id),
    developerName: text(row.DeveloperName),
    topic: text(meta.topicName),
    state: text(meta.state),
    defaultReplay: text(meta.defaultReplay),
    errorRecoveryReplay: text(meta.errorRecoveryReplay),
  };
}
