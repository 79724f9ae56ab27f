// The benches' push-only receivers also meet the daemon's reconcile lookups (#27): a resumed or first
// run asks Loki's query API what it already holds before pushing. A real Loki with nothing stored
// answers an empty stream list; so do these.
import type { IncomingMessage, ServerResponse } from "node:http";

/** Answers a `query_range` as a Loki holding nothing; false for any other request (a push). */
export function answeredEmptyLookup(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method !== "GET" || !(req.url ?? "").startsWith("/loki/api/v1/query_range")) return false;
  req.resume();
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ status: "success", data: { resultType: "streams", result: [] } }));
  return true;
}
