// EventLogFile drain throughput and memory: one file of N realistic-width rows (21 quoted columns,
// ~330 bytes a row) streamed from the simulated org through EventLogFileSource, entries consumed and
// discarded. The org runs in its own child process, as Salesforce would be remote, so this process's
// CPU and RSS are the source's alone. The reference, on the same file in the same run, is the least
// any reader can do: download the body and parse it with csv-parse, nothing else; `ratio` is ours
// over it (1.0 would mean shaping costs nothing).
//
// Usage: node bench/eventlogfile.ts                 250 000 and 1 000 000 rows, each in a fresh process,
//                                                   with V8's default young generation and a 16 MiB one,
//                                                   through the source alone and through the whole
//                                                   daemon (bench/eventlogfile-daemon.ts)
//        node bench/eventlogfile.ts --run <rows>   one measurement, JSON on stdout
// Goal: 1 000 000 rows in < 15 s with peak RSS < 256 MiB that stays flat.
import { mib, startMeasure } from "./measure.ts";
import { fork, type ChildProcess } from "node:child_process";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { parse } from "csv-parse";
import type { LogEntry } from "../src/model.ts";
import { staticAccessTokens } from "../src/salesforce/access-token.ts";
import { RestClient } from "../src/salesforce/rest.ts";
import { elfFile, startSimRest } from "../src/sim/salesforce-rest/index.ts";
import { EventLogFileSource } from "../src/sources/eventlogfile/source.ts";
import { ELF_DEFAULTS } from "../src/sources/eventlogfile/settings.ts";
import { eachEntry } from "../src/sources/source.ts";
import { daemonRunInChild, type DaemonDrainFigures } from "./eventlogfile-daemon.ts";

const HERE = fileURLToPath(import.meta.url);

export interface DrainFigures {
  rows_per_s: number;
  seconds: number;
  peak_rss_mib: number;
  cpu_seconds: number;
  /** RSS when a quarter, half, three quarters and all of the rows were through: flat is the goal. */
  rss_mib_by_quarter: number[];
  reference_rows_per_s: number;
  ratio: number;
}

/** Starts the simulated org in a child process holding one file of `rows` rows. */
async function startOrg(rows: number): Promise<{ instanceUrl: string; child: ChildProcess }> {
  const child = fork(HERE, ["--sim", String(rows), String(Date.now() - 2 * 3_600_000)], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const instanceUrl = await new Promise<string>((resolve, reject) => {
    child.once("message", (m) => {
      resolve(typeof m === "string" ? m : "");
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      reject(new Error(`simulated org exited with ${code}`));
    });
  });
  return { instanceUrl, child };
}

async function serveOrg(rows: number, createdMs: number): Promise<void> {
  const sim = await startSimRest();
  elfFile(sim.data, { n: 1, eventType: "API", createdMs, rows });
  process.send?.(sim.instanceUrl);
  process.once("disconnect", () => {
    void sim.stop().then(() => process.exit(0));
  });
}

/** Download + csv-parse only: the floor for any reader of the same file. */
async function reference(rest: RestClient, fileId: string, rows: number): Promise<number> {
  const started = performance.now();
  const download = await rest.download(rest.path(`sobjects/EventLogFile/${fileId}/LogFile`));
  const parser = Readable.from(download).pipe(parse({ bom: true, relax_column_count: true }));
  let n = 0;
  for await (const _ of parser) n++;
  if (n !== rows + 1) throw new Error(`reference parsed ${n} records, expected ${rows + 1}`);
  return rows / ((performance.now() - started) / 1000);
}

export async function benchEventLogFileDrain(
  rows: number,
  onEntry: (entry: LogEntry) => void = () => undefined,
): Promise<DrainFigures> {
  const org = await startOrg(rows);
  const tokens = staticAccessTokens(org.instanceUrl);
  const rest = new RestClient({ tokens, apiVersion: "60.0" });
  try {
    const source = new EventLogFileSource({
      settings: {
        ...ELF_DEFAULTS,
        enabled: true,
        event_types: [{ name: "API", structured_metadata_fields: null, labels: [], sample: 1 }],
      },
      tokens,
      apiVersion: "60.0",
      structuredMetadataFields: ["USER_ID", "CLIENT_IP"],
      once: true,
      rest,
    });
    const quarters = [rows / 4, rows / 2, (3 * rows) / 4, rows].map(Math.floor);
    const rssByQuarter: number[] = [];
    const measure = startMeasure();
    let n = 0;
    for await (const entry of eachEntry(
      source.events({ load: () => Promise.resolve(undefined) }, new AbortController().signal),
    )) {
      if (entry.checkpointOnly) continue;
      onEntry(entry);
      n++;
      if (n === quarters[rssByQuarter.length]) rssByQuarter.push(mib(process.memoryUsage.rss()));
    }
    const { seconds, cpu_seconds, peak_rss_mib } = measure.stop();
    if (n !== rows) throw new Error(`drained ${n} rows, expected ${rows}`);
    const referenceRate = await reference(rest, "0ATSIM000000000001", rows);
    const rate = rows / seconds;
    return {
      rows_per_s: Math.round(rate),
      seconds: Math.round(seconds * 100) / 100,
      // Sampled during the drain only (the reference pass afterwards allocates on its own account).
      peak_rss_mib,
      cpu_seconds,
      rss_mib_by_quarter: rssByQuarter,
      reference_rows_per_s: Math.round(referenceRate),
      ratio: Math.round((rate / referenceRate) * 100) / 100,
    };
  } finally {
    await rest.close();
    org.child.disconnect();
  }
}

async function runInChild(rows: number, execArgv: string[]): Promise<DrainFigures> {
  const child = fork(HERE, ["--run", String(rows)], {
    execArgv,
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  let out = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new Error(`bench run for ${rows} rows exited with ${code}`);
  return JSON.parse(out) as DrainFigures;
}

if (process.argv[1] === HERE) {
  const [flag, arg, created] = process.argv.slice(2);
  if (flag === "--sim") await serveOrg(Number(arg), Number(created));
  else if (flag === "--run") {
    console.log(JSON.stringify(await benchEventLogFileDrain(Number(arg))));
    process.exit(0);
  } else {
    // V8's default young generation grows to tens of MiB under this allocation rate and the RSS with
    // it; a 16 MiB semi-space keeps RSS low at no cost in speed, so both are reported.
    const results: Record<string, DrainFigures> = {};
    const daemon: Record<string, DaemonDrainFigures & { daemon_over_source: number }> = {};
    for (const rows of [250_000, 1_000_000]) {
      for (const flags of [[], ["--max-semi-space-size=16"]]) {
        const name = [String(rows), ...flags].join(" ");
        results[name] = await runInChild(rows, flags);
        const whole = await daemonRunInChild(rows, flags);
        // What the pipeline, the Loki sink and the checkpoints cost on top of the source, same file.
        const ratio = Math.round((whole.rows_per_s / results[name].rows_per_s) * 100) / 100;
        daemon[name] = { ...whole, daemon_over_source: ratio };
      }
    }
    console.log(JSON.stringify({ bench: "eventlogfile_drain", results, daemon }, null, 2));
  }
}
