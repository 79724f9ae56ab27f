// The REST side of the simulated org as a node:http request handler: SOQL and Tooling queries with
// nextRecordsUrl paging, EventLogFile CSV blobs, ApexLog bodies, limits and describeGlobal, with
// faults injected at the wire. Paths outside /services/data are left to other handlers (OAuth).
import { simUsers } from "./users.ts";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Clock } from "../../util/clock.ts";
import {
  DEFAULT_LIMITS,
  DEFAULT_SOBJECTS,
  EVENT_LOG_FILE_DESCRIBE,
  type SimApexLog,
  type SimData,
  type SimEventLogFile,
  type SimLimit,
  type SimRecord,
} from "./data.ts";
import { csvStream } from "./elf-csv.ts";
import { SimFaults, type FaultRule } from "./faults.ts";
import { runQuery, SimQueryError } from "./query.ts";

export interface SimRestOptions {
  /** Seeds the generated CSV cells. */
  seed?: number;
  /** The org's clock: record visibility and the `Date` header (defaults to the system clock). */
  clock?: Pick<Clock, "now">;
  /** Added to the `Date` header: a server clock ahead (positive) or behind ours. */
  serverClockOffsetMs?: number;
  /** Which bearer tokens are accepted; default any non-empty one. */
  validToken?: (token: string) => boolean;
  objects?: Record<string, SimRecord[]>;
  bigObjects?: string[];
  eventLogFiles?: SimEventLogFile[];
  apexLogs?: SimApexLog[];
  limits?: Record<string, SimLimit>;
  sobjects?: string[];
  traceFlags?: SimRecord[];
  /** More describeGlobal names, computed per call (the simulated org adds its Pub/Sub topics). */
  moreSObjects?: () => Iterable<string>;
  /** Records per query page before `nextRecordsUrl` (Salesforce: 2000). */
  batchSize?: number;
  faults?: FaultRule[];
}

export interface SimRestStats {
  requests: number;
  /** Every SOQL text received, in order. */
  queries: string[];
  downloads: number;
  /** Body bytes of CSV and ApexLog downloads written. */
  bytesServed: number;
  unauthorized: number;
  /** Successful GETs of the limits endpoint. */
  limitsCalls: number;
}

export interface SimRestHandler {
  (req: IncomingMessage, res: ServerResponse): boolean;
  readonly data: SimData;
  readonly faults: SimFaults;
  readonly stats: SimRestStats;
  /** Mutable: shifts the `Date` header to simulate clock skew. */
  serverClockOffsetMs: number;
}

const PREFIX = /^\/services\/data\/v\d+\.\d+(\/.*)?$/;
const MAX_URI = 16_384;

export function createSimRest(opts: SimRestOptions = {}): SimRestHandler {
  const clock = opts.clock ?? { now: () => Date.now() };
  const seed = opts.seed ?? 1;
  const batchSize = opts.batchSize ?? 2000;
  const validToken = opts.validToken ?? ((t: string) => t.length > 0);
  const data: SimData = {
    objects: opts.objects ?? {},
    bigObjects: new Set(opts.bigObjects ?? []),
    eventLogFiles: opts.eventLogFiles ?? [],
    apexLogs: opts.apexLogs ?? [],
    limits: opts.limits ?? { ...DEFAULT_LIMITS },
    sobjects: opts.sobjects ?? [...DEFAULT_SOBJECTS],
    traceFlags: opts.traceFlags ?? [],
    users: simUsers(),
  };
  const faults = new SimFaults();
  for (const rule of opts.faults ?? []) faults.add(rule);
  const stats: SimRestStats = {
    requests: 0,
    queries: [],
    downloads: 0,
    bytesServed: 0,
    unauthorized: 0,
    limitsCalls: 0,
  };
  const cursors = new Map<string, { records: Record<string, unknown>[]; tooling: boolean }>();
  let nextCursor = 0;

  const handler = ((req: IncomingMessage, res: ServerResponse): boolean => {
    const url = new URL(req.url ?? "/", "http://sim");
    const m = PREFIX.exec(url.pathname);
    if (!m) return false;
    stats.requests++;
    const rest = m[1] ?? "/";
    const base = url.pathname.slice(0, url.pathname.length - rest.length);
    const date = new Date(clock.now() + handler.serverClockOffsetMs).toUTCString();

    const send = (status: number, body: unknown): void => {
      res.writeHead(status, { "content-type": "application/json;charset=UTF-8", date });
      res.end(JSON.stringify(body));
    };
    const sfError = (status: number, errorCode: string, message: string): void => {
      send(status, [{ message, errorCode }]);
    };

    if ((req.url ?? "").length > MAX_URI) {
      res.writeHead(414, { "content-type": "text/html", date });
      res.end("<html><body>414 Request-URI Too Long</body></html>");
      return true;
    }
    const auth = req.headers.authorization ?? "";
    const token = auth.startsWith("Bearer ") ? auth.slice(7) : "";
    if (!validToken(token)) {
      stats.unauthorized++;
      sfError(401, "INVALID_SESSION_ID", "Session expired or invalid");
      return true;
    }

    const route = routeOf(rest);
    const fault = route ? faults.take(route, `${url.pathname}${url.search}`) : undefined;
    if (fault) {
      switch (fault.kind) {
        case "throttle":
          sfError(403, "REQUEST_LIMIT_EXCEEDED", "TotalRequests Limit exceeded.");
          return true;
        case "server_error":
          sfError(503, "SERVER_UNAVAILABLE", "Service temporarily unavailable");
          return true;
        case "invalid_session":
          sfError(401, "INVALID_SESSION_ID", "Session expired or invalid");
          return true;
        case "reset":
          req.socket.destroy();
          return true;
        case "html":
          if (route !== "elf_csv" && route !== "apexlog_body") {
            res.writeHead(200, { "content-type": "text/html", date });
            res.end("<html><head><title>Maintenance</title></head><body>Back soon</body></html>");
            return true;
          }
          break;
        case "cut":
          break;
      }
    }
    const cutAfter = fault?.kind === "cut" ? (fault.afterBytes ?? 1000) : undefined;

    try {
      const tooling = rest.startsWith("/tooling/");
      const local = tooling ? rest.slice("/tooling".length) : rest;
      if (local === "/query" || local === "/query/") {
        const soql = url.searchParams.get("q") ?? "";
        stats.queries.push(soql);
        const records = runQuery(soql, data, clock.now(), tooling);
        sendPage(records, tooling);
        return true;
      }
      const cursor = /^\/query\/([A-Za-z0-9-]+)$/.exec(local);
      if (cursor) {
        const state = cursors.get(cursor[1]!);
        if (!state) {
          sfError(400, "INVALID_QUERY_LOCATOR", "invalid query locator");
          return true;
        }
        cursors.delete(cursor[1]!);
        sendPage(state.records, state.tooling);
        return true;
      }
      if (local === "/limits" || local === "/limits/") {
        stats.limitsCalls++;
        send(200, data.limits);
        return true;
      }
      if (local === "/sobjects" || local === "/sobjects/") {
        const names = [...new Set([...data.sobjects, ...(opts.moreSObjects?.() ?? [])])].sort();
        send(200, {
          encoding: "UTF-8",
          maxBatchSize: 200,
          sobjects: names.map((name) => ({ name, label: name, queryable: true })),
        });
        return true;
      }
      if (local === "/sobjects/EventLogFile/describe" && !tooling) {
        send(200, EVENT_LOG_FILE_DESCRIBE);
        return true;
      }
      const elf = /^\/sobjects\/EventLogFile\/([A-Za-z0-9]+)\/LogFile$/.exec(local);
      if (elf && !tooling) {
        const file = data.eventLogFiles.find((f) => f.Id === elf[1]);
        if (!file) {
          sfError(404, "NOT_FOUND", "The requested resource does not exist");
          return true;
        }
        stats.downloads++;
        const hourMs = file.Interval === "Hourly" ? 3_600_000 : 86_400_000;
        const body = csvStream({
          eventType: file.EventType,
          rows: file.rows,
          firstRow: file.firstRow,
          startMs: Date.parse(file.LogDate.replace("+0000", "Z")),
          spanMs: hourMs,
          seed,
          customize: file.customize,
        });
        res.writeHead(200, { "content-type": "text/csv", date });
        streamBody(body, res, cutAfter);
        return true;
      }
      const apex = /^\/sobjects\/ApexLog\/([A-Za-z0-9]+)\/Body\/?$/.exec(local);
      if (apex && tooling) {
        const log = data.apexLogs.find((l) => l.Id === apex[1]);
        if (!log) {
          sfError(404, "NOT_FOUND", "The requested resource does not exist");
          return true;
        }
        stats.downloads++;
        res.writeHead(200, { "content-type": "text/plain", date });
        const buf = Buffer.from(log.body, "utf8");
        if (cutAfter !== undefined) {
          res.write(buf.subarray(0, cutAfter), () => res.destroy());
        } else {
          stats.bytesServed += buf.length;
          res.end(buf);
        }
        return true;
      }
      sfError(404, "NOT_FOUND", "The requested resource does not exist");
      return true;
    } catch (err) {
      if (err instanceof SimQueryError) sfError(400, err.errorCode, err.message);
      else sfError(500, "UNKNOWN_EXCEPTION", String(err));
      return true;
    }

    function sendPage(records: Record<string, unknown>[], tooling: boolean): void {
      const page = records.slice(0, batchSize);
      const restRecords = records.slice(batchSize);
      const body: Record<string, unknown> = {
        totalSize: records.length,
        done: restRecords.length === 0,
        records: page,
      };
      if (restRecords.length > 0) {
        const id = `01gSIM${String(++nextCursor).padStart(9, "0")}-${batchSize}`;
        cursors.set(id, { records: restRecords, tooling });
        body.nextRecordsUrl = `${base}${tooling ? "/tooling" : ""}/query/${id}`;
      }
      send(200, body);
    }
  }) as SimRestHandler;

  function streamBody(body: NodeJS.ReadableStream, res: ServerResponse, cutAfter: number | undefined): void {
    let sent = 0;
    body.on("data", (chunk: Buffer) => {
      if (cutAfter !== undefined && sent + chunk.length >= cutAfter) {
        const head = chunk.subarray(0, Math.max(0, cutAfter - sent));
        sent += head.length;
        stats.bytesServed += head.length;
        body.pause();
        res.write(head, () => res.destroy());
        return;
      }
      sent += chunk.length;
      stats.bytesServed += chunk.length;
      if (!res.write(chunk)) {
        body.pause();
        res.once("drain", () => body.resume());
      }
    });
    body.on("end", () => {
      if (cutAfter === undefined || sent < cutAfter) res.end();
    });
    res.on("close", () => {
      if (!res.writableFinished) (body as unknown as { destroy(): void }).destroy();
    });
  }

  Object.defineProperties(handler, {
    data: { value: data },
    faults: { value: faults },
    stats: { value: stats },
  });
  handler.serverClockOffsetMs = opts.serverClockOffsetMs ?? 0;
  return handler;
}

function routeOf(rest: string): "query" | "elf_csv" | "apexlog_body" | "limits" | "describe" | undefined {
  if (/\/query(\/|$)/.test(rest)) return "query";
  if (rest.endsWith("/LogFile")) return "elf_csv";
  if (/\/Body\/?$/.test(rest)) return "apexlog_body";
  if (rest.startsWith("/limits")) return "limits";
  if (rest.startsWith("/sobjects")) return "describe";
  return undefined;
}
