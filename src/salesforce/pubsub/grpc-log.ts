// grpc-js writes its own diagnostics with console.error as raw `E 2026-… | …` lines on stderr, outside
// the operator's log format (a JSON collector cannot parse them) and outside the logger's redaction of
// credentials in URLs. Routed here, each is one record of ours, `component: grpc-js`.
import { setLogger } from "@grpc/grpc-js";
import type { Logger } from "../../obs/logger.ts";

function text(message: unknown, rest: unknown[]): string {
  return [message, ...rest].map((part) => (typeof part === "string" ? part : JSON.stringify(part))).join(" ");
}

/**
 * Sends grpc-js's log lines (process-wide: grpc-js keeps one logger) to `log`. Its errors are logged as
 * warnings: a failing call reaches the Pub/Sub client as a status it acts on and reports itself, and
 * this line is context for it, not a second failure.
 */
export function routeGrpcLogs(log: Logger): void {
  const grpc = log.child({ component: "grpc-js" });
  setLogger({
    error: (message: unknown, ...rest: unknown[]) => {
      grpc.warn(text(message, rest));
    },
    info: (message: unknown, ...rest: unknown[]) => {
      grpc.info(text(message, rest));
    },
    debug: (message: unknown, ...rest: unknown[]) => {
      grpc.debug(text(message, rest));
    },
  });
}
