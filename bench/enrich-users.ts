// What `enrich.users` costs per entry on the hot path: the same entries (EventLogFile rows named by a
// 15-character USER_ID, and Pub/Sub events by an 18-character UserId, as the daemon shapes them)
// made (as a source makes them) and pulled through a pass-through source wrapper, or through
// UserEnrichedSource with a warm cache, interleaved per sample. Both timings include making the
// entries, so `ratio` is the share of a source's entry throughput enrichment leaves. Prints JSON
// {entries, plain_eps, enriched_eps, ratio, ns_per_entry_added}.
//
// Usage: node bench/enrich-users.ts [entries=200000] [--samples 5] [--min-window-ms 1000]
import { parseArgs } from "node:util";
import { UserDirectory } from "../src/enrich/users/directory.ts";
import { UserEnrichedSource } from "../src/enrich/users/source.ts";
import { LogEntry } from "../src/model.ts";
import { SIM_USERS, simUser, simUserId, simUserId15 } from "../src/sim/salesforce-rest/users.ts";
import type { SalesforceUser } from "../src/salesforce/user-query.ts";
import { canonicalJson } from "../src/sources/shaping/json.ts";
import type { Source, SourceItem } from "../src/sources/source.ts";
import { ManualClock } from "../src/util/clock.ts";
import { median, summarise, timedWindow, total } from "./sample.ts";

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    samples: { type: "string", default: "5" },
    "min-window-ms": { type: "string", default: "1000" },
  },
});
const N = Number(positionals[0] ?? 200_000);
const SAMPLES = Number(flags.samples);
const MIN_MS = Number(flags["min-window-ms"]);

function lines(): string[] {
  const out: string[] = [];
  for (let n = 0; n < N; n++) {
    const u = n % SIM_USERS;
    out.push(
      n % 2 === 0
        ? canonicalJson({
            EVENT_TYPE: "API",
            TIMESTAMP: "20260101100000.123",
            REQUEST_ID: `sim-API-${n}`,
            ORGANIZATION_ID: "00DSIM000000001",
            USER_ID: simUserId15(u),
            RUN_TIME: "123",
            CPU_TIME: "45",
            URI: "/services/data/v60.0/query",
            SESSION_KEY: "sk000123SIMSESSION",
            LOGIN_KEY: "lk00045SIMLOGIN",
            USER_TYPE: "Standard",
            REQUEST_STATUS: "S",
            DB_TOTAL_TIME: "8812345",
            CLIENT_IP: "10.1.2.3",
            API_TYPE: "R",
          })
        : canonicalJson({
            EventIdentifier: `sim-LoginEventStream-${n}`,
            EventDate: 1767261600000,
            UserId: simUserId(u),
            Username: `user${u}@example.com`,
            SourceIp: "10.1.2.3",
            LoginType: "Application",
            Status: "Success",
            Browser: "Chrome",
          }),
    );
  }
  return out;
}

/** Entries i..i+499, in a run as a CSV chunk yields them. */
function run(i: number): LogEntry[] {
  return source.slice(i, i + 500).map(
    (line, k) =>
      new LogEntry({
        timestampNs: BigInt(i + k),
        labels: { source: "bench" },
        line,
        structuredMetadata: { level: "info" },
        checkpoint: { key: "k", value: String(i + k) },
      }),
  );
}

/** Makes each run of entries when pulled, as a source does from what it read. */
class RunsSource implements Source {
  readonly name = "eventlogfile" as const;
  async *events(): AsyncGenerator<SourceItem> {
    for (let i = 0; i < source.length; i += 500) yield await Promise.resolve(run(i));
  }
}

class PassThrough implements Source {
  readonly name = "eventlogfile" as const;
  readonly inner: Source;
  constructor(inner: Source) {
    this.inner = inner;
  }
  async *events(state: Parameters<Source["events"]>[0], signal: AbortSignal): AsyncGenerator<SourceItem> {
    for await (const item of this.inner.events(state, signal)) yield item;
  }
}

const users: SalesforceUser[] = Array.from({ length: SIM_USERS }, (_, i) => {
  const r = simUser(i);
  return {
    id: r.Id as string,
    username: r.Username as string,
    name: r.Name as string,
    profile: (r.Profile as { Name: string }).Name,
    role: (r.UserRole as { Name: string } | null)?.Name ?? null,
    isActive: r.IsActive as boolean,
  };
});
const directory = new UserDirectory({
  settings: {
    enabled: true,
    max_users: 10_000,
    ttl: 86_400_000,
    max_queries_per_hour: 120,
    batch_size: 200,
    batch_wait: 2_000,
    warmup_wait: 5_000,
  },
  lookup: { byIds: () => Promise.resolve([]), recent: () => Promise.resolve({ users, requests: 1 }) },
  clock: new ManualClock(),
});
const source = lines();
const state = { load: () => Promise.resolve(undefined) };

async function pass(enrich: boolean): Promise<{ ms: number; enriched: number }> {
  const inner = new RunsSource();
  const wrapped = enrich ? new UserEnrichedSource(inner, directory) : new PassThrough(inner);
  const signal = new AbortController().signal;
  const t0 = performance.now();
  let enriched = 0;
  for await (const item of wrapped.events(state, signal)) {
    for (const e of item as LogEntry[]) if (e.structuredMetadata.Username !== undefined) enriched++;
  }
  const ms = performance.now() - t0;
  if (enrich && enriched !== N) throw new Error(`only ${enriched} of ${N} entries enriched`);
  return { ms, enriched };
}

await pass(true); // warm-up: the directory's warm-up query, JIT
const plain: number[] = [];
const rich: number[] = [];
const ratios: number[] = [];
for (let s = 0; s < SAMPLES; s++) {
  const a = await timedWindow(MIN_MS, () => pass(false));
  const b = await timedWindow(MIN_MS, () => pass(true));
  const plainEps = (a.length * N) / (total(a, (p) => p.ms) / 1000);
  const richEps = (b.length * N) / (total(b, (p) => p.ms) / 1000);
  plain.push(plainEps);
  rich.push(richEps);
  ratios.push(richEps / plainEps);
}
const p = summarise(plain);
const r = summarise(rich);
console.log(
  JSON.stringify({
    entries: N,
    plain_eps: p.median,
    plain_eps_samples: p.samples,
    enriched_eps: r.median,
    enriched_eps_samples: r.samples,
    ratio: Math.round(median(ratios) * 1000) / 1000,
    ns_per_entry_added: Math.round(1e9 / r.median - 1e9 / p.median),
  }),
);
