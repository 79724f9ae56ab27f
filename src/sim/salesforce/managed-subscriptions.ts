// The simulated org's managed event subscriptions (Pub/Sub API beta): ManagedEventSubscription
// records as the Tooling API lists them, and the replay each one keeps on the server. What Salesforce
// documents, the sim does: a subscription starts at its committed replay, else at defaultReplay; a
// committed replay older than the retention restarts at errorRecoveryReplay; RUN -> STOP disconnects
// the subscriber and deletes the committed replay; one subscriber at a time.
import type { SimRecord } from "../salesforce-rest/data.ts";

export type ManagedState = "RUN" | "STOP";
export type ManagedReplay = "LATEST" | "EARLIEST";

export interface SimManagedSubscriptionSpec {
  developerName: string;
  topic: string;
  /** Default RUN. */
  state?: ManagedState;
  /** Default LATEST, as in Salesforce. */
  defaultReplay?: ManagedReplay;
  /** Default LATEST, as in Salesforce. */
  errorRecoveryReplay?: ManagedReplay;
}

export class SimManagedSubscription {
  /** The Tooling API record id (key prefix 18x, 18 characters). */
  readonly id: string;
  readonly developerName: string;
  /** The Tooling API row; kept in step with the fields below, so a query sees what the RPC does. */
  readonly record: SimRecord;
  /** Sequence number of the last committed replay id; undefined: none (never, or cleared by a STOP). */
  committed: number | undefined;
  commits = 0;
  refusedCommits = 0;
  /** Messages the next commits are refused with (an `Error` of code COMMIT), consumed in order. */
  readonly commitRefusals: string[] = [];
  /** Whether a ManagedSubscribe stream holds it now. */
  subscribed = false;

  constructor(id: string, spec: SimManagedSubscriptionSpec) {
    this.id = id;
    this.developerName = spec.developerName;
    this.record = {
      Id: id,
      DeveloperName: spec.developerName,
      MasterLabel: spec.developerName,
      Metadata: {
        label: spec.developerName,
        topicName: spec.topic,
        state: spec.state ?? "RUN",
        defaultReplay: spec.defaultReplay ?? "LATEST",
        errorRecoveryReplay: spec.errorRecoveryReplay ?? "LATEST",
      },
    };
  }

  #meta(): Record<string, string> {
    return this.record.Metadata as Record<string, string>;
  }

  get topic(): string {
    return this.#meta().topicName!;
  }

  get state(): ManagedState {
    return this.#meta().state as ManagedState;
  }

  set state(next: ManagedState) {
    // Salesforce: moving to STOP disconnects the subscriber and deletes the committed replay.
    if (next === "STOP") this.committed = undefined;
    this.#meta().state = next;
  }

  get defaultReplay(): ManagedReplay {
    return this.#meta().defaultReplay as ManagedReplay;
  }

  get errorRecoveryReplay(): ManagedReplay {
    return this.#meta().errorRecoveryReplay as ManagedReplay;
  }
}

export class SimManagedSubscriptions {
  /** The Tooling API's ManagedEventSubscription rows, the very array the REST side queries. */
  readonly records: SimRecord[] = [];
  readonly #all: SimManagedSubscription[] = [];
  #seq = 0;

  create(spec: SimManagedSubscriptionSpec): SimManagedSubscription {
    if (this.#all.some((s) => s.developerName === spec.developerName))
      throw new Error(`sim: a managed subscription named ${spec.developerName} exists`);
    this.#seq++;
    const sub = new SimManagedSubscription(`18xSIM${String(this.#seq).padStart(9, "0")}AAA`, spec);
    this.#all.push(sub);
    this.records.push(sub.record);
    return sub;
  }

  /** By Tooling API id or developer name, as the first ManagedFetchRequest names it. */
  find(ref: { id?: string; name?: string }): SimManagedSubscription | undefined {
    return this.#all.find(
      (s) =>
        (ref.id !== undefined && ref.id !== "" && s.id === ref.id) ||
        (ref.name !== undefined && ref.name !== "" && s.developerName === ref.name),
    );
  }

  /** By id or developer name; throws when there is none (a test's typo should not pass silently). */
  get(ref: string): SimManagedSubscription {
    const sub = this.find({ id: ref, name: ref });
    if (!sub) throw new Error(`sim: no managed subscription ${ref}`);
    return sub;
  }

  delete(ref: string): SimManagedSubscription {
    const sub = this.get(ref);
    this.#all.splice(this.#all.indexOf(sub), 1);
    this.records.splice(this.records.indexOf(sub.record), 1);
    return sub;
  }

  all(): readonly SimManagedSubscription[] {
    return this.#all;
  }
}
