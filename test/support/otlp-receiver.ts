// An independent OTLP/HTTP logs receiver for the tests: node:http on 127.0.0.1, every body gunzipped
// when sent so and decoded with the official opentelemetry-proto definitions (otlp-proto.ts), never
// with sf2loki's own code. Answers are scripted per request; the default is a 200 with an empty
// ExportLogsServiceResponse, as the OpenTelemetry Collector answers.
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { decodeExportRequest, encodeExportResponse, flatRecords, type FlatRecord } from "./otlp-proto.ts";

export interface ReceivedExport {
  readonly headers: IncomingHttpHeaders;
  readonly records: FlatRecord[];
  /** ResourceLogs in the export. */
  readonly resources: number;
}

export interface ScriptedAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: Buffer | string;
}

/** Decides the answer to one export; `stored` is told which of its records count as kept. */
export type Answerer = (received: ReceivedExport) => ScriptedAnswer & { stored?: FlatRecord[] };

export interface OtlpReceiver {
  readonly url: string;
  /** Every export received, in order, decoded. */
  readonly exports: ReceivedExport[];
  /** Records the receiver kept (all of a 2xx unless the answerer said otherwise). */
  readonly stored: FlatRecord[];
  /** Answers the next exports with these, in order; then back to `answer`. */
  script(...answers: (ScriptedAnswer | Answerer)[]): void;
  /** The answer once the script is spent (default: 200, every record stored). */
  answer: Answerer;
  stop(): Promise<void>;
}

export const ok: Answerer = () => ({
  status: 200,
  headers: { "content-type": "application/x-protobuf" },
  body: encodeExportResponse(),
});

export async function startOtlpReceiver(path = "/v1/logs"): Promise<OtlpReceiver> {
  const exports: ReceivedExport[] = [];
  const stored: FlatRecord[] = [];
  const queue: (ScriptedAnswer | Answerer)[] = [];
  const receiver = {
    url: "",
    exports,
    stored,
    answer: ok,
    script(...answers: (ScriptedAnswer | Answerer)[]): void {
      queue.push(...answers);
    },
    stop: async (): Promise<void> => {},
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== path) {
        res.writeHead(404).end("not found");
        return;
      }
      let body = Buffer.concat(chunks);
      if (req.headers["content-encoding"] === "gzip") body = gunzipSync(body);
      let received: ReceivedExport;
      try {
        const decoded = decodeExportRequest(body);
        received = {
          headers: req.headers,
          records: flatRecords(decoded),
          resources: decoded.resource_logs.length,
        };
      } catch (err) {
        res.writeHead(400, { "content-type": "text/plain" }).end(`undecodable: ${String(err)}`);
        return;
      }
      exports.push(received);
      const next = queue.shift() ?? receiver.answer;
      const answer: ScriptedAnswer & { stored?: FlatRecord[] } =
        typeof next === "function" ? next(received) : next;
      const ok2xx = answer.status >= 200 && answer.status < 300;
      stored.push(...(answer.stored ?? (ok2xx ? received.records : [])));
      res.writeHead(answer.status, answer.headers ?? {}).end(answer.body ?? "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  receiver.url = `http://127.0.0.1:${port}${path}`;
  receiver.stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => {
        resolve();
      });
    });
  return receiver;
}

/** A google.rpc.Status with `message`, as Loki (application/octet-stream) and the Collector send it. */
export { encodeStatus as statusBody } from "./otlp-proto.ts";
