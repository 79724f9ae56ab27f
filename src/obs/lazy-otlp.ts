// The OTLP/HTTP metric exporter, loaded at its first export instead of at startup: the exporter and
// its protobuf serializer cost ~10 MiB of RSS, and most deployments scrape /metrics and never push.
// Temporality and aggregation are the exporter's defaults (cumulative), the same the reader would ask
// the loaded exporter for.
import type { AgentOptions } from "node:http";
import type { PushMetricExporter, ResourceMetrics } from "@opentelemetry/sdk-metrics";
import { nodeAgentOptions } from "../util/node-agents.ts";
import { unreachable } from "../util/proxy-fault.ts";

type ExportCallback = Parameters<PushMetricExporter["export"]>[1];

type ExportResultCode = Parameters<ExportCallback>[0]["code"];

/** ExportResultCode.FAILED of @opentelemetry/core, which is not a direct dependency. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-enum-assignment -- the enum's value, spelled out
const FAILED = 1 as ExportResultCode;

export class LazyOtlpExporter implements PushMetricExporter {
  readonly #url: string;
  readonly #headers: Record<string, string>;
  readonly #agent: AgentOptions;
  #exporter: Promise<PushMetricExporter> | undefined;
  #shutDown = false;

  constructor(url: string, headers: Record<string, string>) {
    this.#url = url;
    this.#headers = headers;
    // Direct or through the environment's proxy, decided now so a Node too old for it fails the start.
    // An endpoint that is no URL keeps failing each export, as `doctor` reports it.
    this.#agent = URL.canParse(url) ? nodeAgentOptions(url) : { keepAlive: true };
  }

  export(metrics: ResourceMetrics, done: ExportCallback): void {
    this.#loaded().then(
      (exporter) => {
        exporter.export(metrics, (result) => {
          // A proxy that is down is named as the proxy in the exporter's error (#34).
          const named =
            result.error && URL.canParse(this.#url) ? unreachable(result.error, this.#url) : undefined;
          if (!named?.proxied) {
            done(result);
            return;
          }
          const { text, hint } = named;
          done({
            ...result,
            error: new Error(`metric export to ${this.#url} failed: ${text}; ${hint}`, {
              cause: result.error,
            }),
          });
        });
      },
      (err: unknown) => {
        done({ code: FAILED, error: err instanceof Error ? err : new Error(String(err)) });
      },
    );
  }

  async forceFlush(): Promise<void> {
    if (this.#exporter) await (await this.#exporter).forceFlush();
  }

  async shutdown(): Promise<void> {
    this.#shutDown = true;
    if (this.#exporter) await (await this.#exporter).shutdown();
  }

  #loaded(): Promise<PushMetricExporter> {
    if (this.#shutDown) return Promise.reject(new Error("the OTLP metric exporter is shut down"));
    this.#exporter ??= import("@opentelemetry/exporter-metrics-otlp-proto").then(
      ({ OTLPMetricExporter }) =>
        new OTLPMetricExporter({ url: this.#url, headers: this.#headers, httpAgentOptions: this.#agent }),
    );
    // A failed load is not kept: the next export tries again.
    this.#exporter.catch(() => (this.#exporter = undefined));
    return this.#exporter;
  }
}
