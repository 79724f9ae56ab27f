// A real Grafana Loki (../shared/loki, 3.4.6) for the loki-real tier: one per test file, a tenant per
// case, per-tenant limits through its runtime overrides file. Delivery is judged by reading Loki back:
// `count()` is a metric query (every stored copy counts), `entries()` a paginated log query (copies
// identical in timestamp and line collapse). Real sleeps are fine here: this tier is not the suite.
import { execFile } from "node:child_process";
import { after, before } from "node:test";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { promisify } from "node:util";
import { stringify } from "yaml";
import type { LokiSinkSettings } from "../../../src/sinks/loki/settings.ts";

const run = promisify(execFile);
const REPO = resolve(new URL("../../..", import.meta.url).pathname);
/** `SF2LOKI_LOKI_SH` points elsewhere; by default the workplace's copy beside the repo. */
export const LOKI_SH = process.env.SF2LOKI_LOKI_SH ?? resolve(REPO, "../shared/loki/loki.sh");

/** Why the tier cannot run here, or undefined when it can. */
export function realLokiMissing(): string | undefined {
  return existsSync(LOKI_SH) ? undefined : `no real Loki at ${LOKI_SH} (set SF2LOKI_LOKI_SH)`;
}

/**
 * One real Loki for the calling test file: started before its first test and stopped after its last.
 * `missing` is why the file skips (no Loki beside the repo); `loki` is the running one.
 */
export function realLokiForFile(options: RealLokiOptions = {}): {
  readonly missing: string | undefined;
  readonly loki: RealLoki;
} {
  const missing = realLokiMissing();
  let running: RealLoki | undefined;
  before(async () => {
    if (missing === undefined) running = await startRealLoki(options);
  });
  after(async () => {
    await running?.stop();
  });
  return {
    missing,
    get loki(): RealLoki {
      if (!running) throw new Error(`no real Loki is running for this file: ${missing ?? "not started yet"}`);
      return running;
    },
  };
}

/** A tenant's limits_config keys: scalars, or nested blocks such as otlp_config. */
export type TenantLimits = Record<string, unknown>;

export interface RealLoki {
  readonly url: string;
  readonly pushUrl: string;
  readonly dir: string;
  /** Replaces the runtime overrides (tenant -> Loki limits_config keys) and waits until Loki read them. */
  setLimits(tenants: Record<string, TenantLimits>): Promise<void>;
  reader(tenant: string): LokiReader;
  /**
   * Flushes every open chunk to the store and waits for it. A querier asks the ingesters only for
   * data dated within `query_ingesters_within` (3h) of now: entries dated earlier are invisible to
   * every query until their chunk is flushed (chunk_idle_period, 30 min). Call before judging data
   * dated hours back (a Pub/Sub backlog, EventLogFile rows).
   */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

const FLUSH_SETTLE_MS = 3000;

/** Loki re-reads the overrides file every second; two periods leave it time to apply them. */
const OVERRIDES_SETTLE_MS = 2500;

export interface RealLokiOptions {
  /**
   * Ruler rule files per tenant (tenant -> file name -> YAML), placed where loki.sh's config has the
   * ruler read them (`data/rules/<tenant>/`) before Loki starts, so they are loaded at start-up.
   */
  rules?: Record<string, Record<string, string>>;
}

export async function startRealLoki(options: RealLokiOptions = {}): Promise<RealLoki> {
  const dir = await mkdtemp(join(tmpdir(), "sf2loki-real-loki-"));
  for (const [tenant, files] of Object.entries(options.rules ?? {})) {
    await mkdir(join(dir, "data", "rules", tenant), { recursive: true });
    for (const [name, text] of Object.entries(files))
      await writeFile(join(dir, "data", "rules", tenant, name), text);
  }
  const { stdout } = await run("bash", [LOKI_SH, "start", dir], { timeout: 120_000 });
  const url = stdout.trim().split("\n").pop()!;
  if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(url)) throw new Error(`loki.sh start printed ${stdout}`);
  return {
    url,
    pushUrl: `${url}/loki/api/v1/push`,
    dir,
    setLimits: async (tenants) => {
      await writeFile(join(dir, "overrides.yaml"), stringify({ overrides: tenants }));
      await delay(OVERRIDES_SETTLE_MS);
    },
    reader: (tenant) => new LokiReader(url, tenant),
    flush: async () => {
      const res = await fetch(`${url}/flush`, { method: "POST" });
      if (res.status !== 204 && res.status !== 200) throw new Error(`Loki /flush answered ${res.status}`);
      await delay(FLUSH_SETTLE_MS);
    },
    stop: async () => {
      await run("bash", [LOKI_SH, "stop", dir]).catch(() => undefined);
      await delay(200);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface StoredEntry {
  labels: Record<string, string>;
  metadata: Record<string, string>;
  tsNs: bigint;
  line: string;
}

/** A page of a log query: Loki serves up to 5000, but a page over 4 MiB breaks its internal gRPC cap. */
const PAGE = 1000;

/** Reads one tenant back through LogQL. Times are epoch nanoseconds; ranges are [start, end). */
export class LokiReader {
  readonly #url: string;
  readonly #tenant: string;
  constructor(url: string, tenant: string) {
    this.#url = url;
    this.#tenant = tenant;
  }

  async #get(path: string, params: Record<string, string>): Promise<unknown> {
    const res = await fetch(`${this.#url}${path}?${new URLSearchParams(params).toString()}`, {
      headers: { "X-Scope-OrgID": this.#tenant, "X-Loki-Response-Encoding-Flags": "categorize-labels" },
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`Loki ${path} answered ${res.status}: ${text.slice(0, 500)}`);
    return (JSON.parse(text) as { data: unknown }).data;
  }

  /**
   * `sum by (<by>) (count_over_time(<selector>[range]))` over [start, end): every stored copy counts.
   * Keyed by the `by` labels' values joined with "|" ("" without `by`).
   */
  async countBy(
    selector: string,
    startNs: bigint,
    endNs: bigint,
    by: readonly string[] = [],
  ): Promise<Map<string, number>> {
    const rangeS = (endNs - startNs + 999_999_999n) / 1_000_000_000n;
    const query = `sum${by.length > 0 ? ` by (${by.join(",")})` : ""} (count_over_time(${selector}[${rangeS}s]))`;
    // An instant query counts (time - range, time]; shift by 1 ns so the range is [start, end).
    const data = (await this.#get("/loki/api/v1/query", { query, time: String(endNs - 1n) })) as {
      result: { metric: Record<string, string>; value: [number, string] }[];
    };
    const out = new Map<string, number>();
    for (const r of data.result) out.set(by.map((k) => r.metric[k] ?? "").join("|"), Number(r.value[1]));
    return out;
  }

  async count(selector: string, startNs: bigint, endNs: bigint): Promise<number> {
    return (await this.countBy(selector, startNs, endNs)).get("") ?? 0;
  }

  /** Every distinct stored entry (a log query: copies identical in timestamp and line collapse). */
  async entries(selector: string, startNs: bigint, endNs: bigint): Promise<StoredEntry[]> {
    const out: StoredEntry[] = [];
    const seen = new Set<string>();
    let from = startNs;
    for (;;) {
      const data = (await this.#get("/loki/api/v1/query_range", {
        query: selector,
        start: String(from),
        end: String(endNs),
        limit: String(PAGE),
        direction: "forward",
      })) as {
        result: {
          stream: Record<string, string>;
          values: [string, string, { structuredMetadata?: Record<string, string> }?][];
        }[];
      };
      let fresh = 0;
      let last = from;
      for (const stream of data.result)
        for (const [ts, line, extra] of stream.values) {
          const tsNs = BigInt(ts);
          if (tsNs > last) last = tsNs;
          const key = `${JSON.stringify(stream.stream)}\u0000${ts}\u0000${line}`;
          if (seen.has(key)) continue;
          seen.add(key);
          fresh++;
          out.push({ labels: stream.stream, metadata: extra?.structuredMetadata ?? {}, tsNs, line });
        }
      // Loki may answer a page short of the limit with more to come (a query split across its store
      // and its ingesters): go on from the newest timestamp until a page brings nothing new.
      if (fresh === 0) break;
      if (last === from && fresh >= PAGE)
        throw new Error(`more than ${PAGE} entries share the timestamp ${from}`);
      from = last;
    }
    out.sort((a, b) => (a.tsNs < b.tsNs ? -1 : a.tsNs > b.tsNs ? 1 : 0));
    return out;
  }

  /** An instant metric query at `atNs`, as the ruler evaluates a rule: each series' labels and value. */
  async instant(query: string, atNs: bigint): Promise<{ metric: Record<string, string>; value: number }[]> {
    const data = (await this.#get("/loki/api/v1/query", { query, time: String(atNs) })) as {
      resultType: string;
      result: { metric: Record<string, string>; value: [number, string] }[];
    };
    if (data.resultType !== "vector") throw new Error(`${query} gave a ${data.resultType}, not a vector`);
    return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  }

  /** A metric range query over [start, end] every `stepS` seconds: each series' labels and points. */
  async matrix(
    query: string,
    startNs: bigint,
    endNs: bigint,
    stepS: number,
  ): Promise<{ metric: Record<string, string>; values: [number, number][] }[]> {
    const data = (await this.#get("/loki/api/v1/query_range", {
      query,
      start: String(startNs),
      end: String(endNs),
      step: String(stepS),
    })) as { resultType: string; result: { metric: Record<string, string>; values: [number, string][] }[] };
    if (data.resultType !== "matrix") throw new Error(`${query} gave a ${data.resultType}, not a matrix`);
    return data.result.map((r) => ({ metric: r.metric, values: r.values.map(([t, v]) => [t, Number(v)]) }));
  }

  /** Label sets of the streams matching `selector` in [start, end). */
  async series(selector: string, startNs: bigint, endNs: bigint): Promise<Record<string, string>[]> {
    return (await this.#get("/loki/api/v1/series", {
      "match[]": selector,
      start: String(startNs),
      end: String(endNs),
    })) as Record<string, string>[];
  }
}

/** Nanoseconds since the epoch, now. */
export const nowNs = (): bigint => BigInt(Date.now()) * 1_000_000n;

/**
 * The settings every real-Loki case starts from: protobuf + snappy to `pushUrl` as `tenant`, no static
 * labels, the default line cap; `extra` adds what the case is about (reconcile, limits).
 */
export function protobufSinkSettings(
  pushUrl: string,
  tenant: string,
  extra: Partial<LokiSinkSettings> = {},
): LokiSinkSettings {
  return {
    url: pushUrl,
    tenant_id: tenant,
    encoding: "protobuf",
    compression: "snappy",
    labels: {},
    batch: { max_line_bytes: 262_144 },
    ...extra,
  };
}
