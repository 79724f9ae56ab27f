// Shutting a process down: every client and server closed in order, one failure logged and the rest
// still closed. The graph's own part is listed once here, so the single-lease app and the sharded
// shell close the same things (a store added to the graph is closed by both).
import { describeError } from "../errors.ts";
import type { Logger } from "../obs/logger.ts";
import type { Graph } from "./wiring.ts";

export type CloseStep = [what: string, close: () => Promise<void>];

/** What one graph opened: its Loki sinks, Salesforce clients, checkpoint and dead-letter stores. */
export function graphCloseSteps(graph: Graph, of = ""): CloseStep[] {
  const suffix = of ? ` of ${of}` : "";
  return [
    [
      `sinks${suffix}`,
      () => Promise.all(graph.destinations.map((d) => d.sink.close())).then(() => undefined),
    ],
    [
      `salesforce clients${suffix}`,
      () => Promise.all(graph.orgs.map((o) => o.rest.close())).then(() => undefined),
    ],
    [`state store${suffix}`, () => graph.store.close()],
    [`dead-letter store${suffix}`, () => graph.deadLetters?.store.close() ?? Promise.resolve()],
  ];
}

export async function closeInOrder(steps: readonly CloseStep[], log: Logger): Promise<void> {
  for (const [what, close] of steps) {
    try {
      await close();
    } catch (err) {
      log.warn({ err: describeError(err) }, `closing ${what} failed`);
    }
  }
}
