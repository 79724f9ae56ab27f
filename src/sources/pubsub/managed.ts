// What a managed subscription (ManagedSubscribe, beta) adds to a topic task: which subscription,
// how a refusal reads to an operator, and when to say it again. The replay is Salesforce's: delivery
// starts after the subscription's committed replay id, whatever our checkpoint says, because the RPC
// takes no position from the client. Our checkpoint is still written (the same key as a subscribed
// topic), so the reconcile lookup covers what the previous run pushed and Salesforce had not been
// told, `sf2loki state` shows it, and moving the topic back to `topics` resumes from it.
import { status } from "@grpc/grpc-js";
import { describeGrpcError, grpcCode, isGrpcError } from "../../salesforce/pubsub/errors.ts";
import type { ManagedRef, ManagedSubscriptionInfo } from "../../salesforce/pubsub/managed-lookup.ts";
import type { ManagedSubscriptionSetting } from "./settings.ts";

export type { ManagedRef } from "../../salesforce/pubsub/managed-lookup.ts";

/** A refusal is said once, then again only after this long if it persists. */
export const MANAGED_REPEAT_MS = 600_000;

export function refOf(m: ManagedSubscriptionSetting): ManagedRef {
  return m.id !== undefined ? { id: m.id } : { developerName: m.name ?? "" };
}

/** `SF2Loki_Login` or `id 18x…`, as lines and labels name it. */
export function nameOf(m: ManagedSubscriptionSetting): string {
  return m.name ?? `id ${m.id ?? ""}`;
}

/** Why Salesforce would not serve a managed subscription, as the task acts on it. */
export type ManagedRefusal = "missing" | "stopped" | "busy" | "other";

export function refusalOf(err: unknown): ManagedRefusal | undefined {
  const code = grpcCode(err);
  if (code === status.NOT_FOUND) return "missing";
  if (code !== status.FAILED_PRECONDITION && code !== status.PERMISSION_DENIED) return undefined;
  const details = isGrpcError(err) ? (err.details ?? "") : "";
  if (/\bSTOP\b|stopped/i.test(details)) return "stopped";
  if (/subscriber|already/i.test(details)) return "busy";
  return "other";
}

/** The one line for a refusal: what happened, and what the operator does about it. */
export function refusalLine(
  refusal: ManagedRefusal,
  m: ManagedSubscriptionSetting,
  err: unknown,
  where: string,
): string {
  const who = `managed subscription ${nameOf(m)} (${m.topic})`;
  const what = describeGrpcError(err);
  switch (refusal) {
    case "missing":
      return (
        `${who} does not exist in ${where} (${what}): create it (docs/pubsub.md, "Managed subscriptions") ` +
        `or correct sources.pubsub.managed_subscriptions; retrying`
      );
    case "stopped":
      return (
        `${who} is stopped (state STOP; ${what}): set its state to RUN in the Tooling API or Metadata API. ` +
        `Salesforce deleted its committed replay when it stopped, so it restarts at its defaultReplay; retrying`
      );
    case "busy":
      return (
        `${who} already has a subscriber (${what}): Salesforce serves one at a time. Another sf2loki ` +
        `process is streaming it, or a stream of a replica that just lost the lease has not closed yet; retrying`
      );
    case "other":
      return `Salesforce refused ${who}: ${what}; retrying`;
  }
}

/** The line for a subscription whose record names another topic than the config: it is not streamed. */
export function topicMismatchLine(m: ManagedSubscriptionSetting, found: ManagedSubscriptionInfo): string {
  return (
    `managed subscription ${nameOf(m)} carries ${found.topic}, but sources.pubsub.managed_subscriptions ` +
    `says ${m.topic}: not subscribing (its events would be labelled as ${m.topic}). Correct the config's ` +
    `topic or the subscription's topicName; checked again on every retry`
  );
}

/** A commit Salesforce refused: nothing is lost, and what a restart costs until one succeeds. */
export function commitRefusedLine(m: ManagedSubscriptionSetting, error: string, refused: number): string {
  return (
    `Salesforce refused to commit the replay id of managed subscription ${nameOf(m)} (${m.topic}): ${error}` +
    `${refused > 1 ? ` (${refused} refusals since the last line)` : ""}. Nothing is lost: the checkpoint holds ` +
    `what Loki accepted, and the next commit is sent with the next batch. Until one succeeds, a restart resumes ` +
    `at Salesforce's older position and re-reads what came after it, looked up in Loki before it is pushed`
  );
}

/**
 * Replay ids kept for re-delivery checks per managed topic (~120 bytes each): more than the default
 * pipeline holds uncommitted (max_uncommitted x max_entries = 16 000) plus the bridge and the credit.
 */
export const REDELIVERY_MEMORY = 20_000;

/**
 * The replay ids this run handed to the pipeline that Salesforce has not acknowledged as committed,
 * each with the stream (a generation number) that last delivered it. A managed stream that reconnects
 * starts again after the subscription's committed replay, so it re-delivers exactly these (still in
 * the pipeline, or in Loki): they are dropped, not pushed twice. And Salesforce commits only a replay
 * id the open stream delivered, so a commit waits until the stream has re-delivered it. No ordering of
 * replay ids is assumed (Salesforce calls them opaque); an acknowledged commit forgets everything
 * handed out up to it. Bounded: if commits stop being acknowledged, the oldest are forgotten past
 * REDELIVERY_MEMORY, and a re-delivery of those would be pushed again.
 */
export class Unacknowledged {
  readonly #cap: number;
  #queue: string[] = [];
  #head = 0;
  readonly #stream = new Map<string, number>();

  constructor(cap = REDELIVERY_MEMORY) {
    this.#cap = cap;
  }

  get size(): number {
    return this.#stream.size;
  }

  /** Stream `gen` delivered `id`: true when it is new to this run, false for a re-delivery. */
  delivered(id: string, gen: number): boolean {
    const known = this.#stream.has(id);
    this.#stream.set(id, gen);
    if (known) return false;
    this.#queue.push(id);
    if (this.#stream.size > this.#cap) this.#stream.delete(this.#queue[this.#head++]!);
    this.#compact();
    return true;
  }

  /** Whether stream `gen` delivered `id` (so a commit of it there is one Salesforce can take). */
  deliveredBy(id: string, gen: number): boolean {
    return this.#stream.get(id) === gen;
  }

  /** Salesforce committed `id`: it and everything handed out before it will not come again. */
  acknowledged(id: string): void {
    if (!this.#stream.has(id)) return;
    for (;;) {
      const next = this.#queue[this.#head++]!;
      this.#stream.delete(next);
      if (next === id) break;
    }
    this.#compact();
  }

  #compact(): void {
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }
}
