// Wildcard topic discovery through describeGlobal (spec A §2.3): every `*EventStream` sObject, as
// the Python version discovers. `<X>Event` with an `<X>EventStore` twin (the newer RTEM generation,
// #122) joins only when `discover_event_store_pairs` asks: a swap must not add topics on its own.
import type { TokenSource } from "../../salesforce/auth.ts";
import { getOnInstance } from "../../salesforce/instance-get.ts";
import { Sf2LokiError } from "../../errors.ts";
import type { Dispatcher } from "../../util/http-dispatchers.ts";

export interface TopicDiscoverer {
  discover(signal?: AbortSignal): Promise<string[]>;
}

export class DiscoveryError extends Sf2LokiError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("SF2LOKI_PUBSUB_DISCOVERY", message, options);
  }
}

export interface DiscoveredTopics {
  streams: string[];
  storePairs: string[];
}

/** The topics a describeGlobal sObject list implies, split by the rule that found each. */
export function topicsFromSObjects(names: readonly string[]): DiscoveredTopics {
  const all = new Set(names);
  const streams = names.filter((n) => n.endsWith("EventStream")).map((n) => `/event/${n}`);
  const storePairs = names
    .filter((n) => n.endsWith("Event") && all.has(`${n}Store`))
    .map((n) => `/event/${n}`);
  return { streams: [...new Set(streams)].sort(), storePairs: [...new Set(storePairs)].sort() };
}

export class DescribeGlobalDiscoverer implements TopicDiscoverer {
  readonly #auth: TokenSource;
  readonly #apiVersion: string;
  readonly #onResult: ((found: DiscoveredTopics) => void) | undefined;
  readonly #storePairs: boolean;
  readonly #http: Dispatcher | undefined;

  constructor(
    auth: TokenSource,
    apiVersion: string,
    onResult?: (found: DiscoveredTopics) => void,
    opts: { storePairs?: boolean; http?: Dispatcher } = {},
  ) {
    this.#auth = auth;
    this.#apiVersion = apiVersion;
    this.#onResult = onResult;
    this.#storePairs = opts.storePairs ?? false;
    this.#http = opts.http;
  }

  async discover(signal?: AbortSignal): Promise<string[]> {
    const { url, res } = await getOnInstance(
      this.#auth,
      `/services/data/v${this.#apiVersion}/sobjects/`,
      signal,
      this.#http,
    );
    if (res.status < 200 || res.status >= 300) {
      throw new DiscoveryError(
        `describeGlobal at ${url} failed: HTTP ${res.status} — ${res.body.slice(0, 200)}`,
      );
    }
    let names: string[];
    try {
      const body = JSON.parse(res.body) as { sobjects?: { name?: unknown }[] };
      names = (body.sobjects ?? []).map((s) => s.name).filter((n): n is string => typeof n === "string");
    } catch (err) {
      throw new DiscoveryError(`describeGlobal at ${url} returned non-JSON: ${res.body.slice(0, 200)}`, {
        cause: err,
      });
    }
    const found = topicsFromSObjects(names);
    this.#onResult?.(found);
    return (this.#storePairs ? [...found.streams, ...found.storePairs] : found.streams).sort();
  }
}
