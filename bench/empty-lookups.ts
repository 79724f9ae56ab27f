// The benches' push-only receivers also meet the daemon's other calls to Loki: reconcile lookups (#27),
// a read of `/config` for the ingester horizon, a flush. A real Loki with nothing stored answers a
// lookup with an empty stream list; so do these. Anything else that is not a push is answered 404, as a
// Loki without that endpoint would, so the daemon falls back to its defaults instead of the receiver
// trying to decode a GET as a push body (and crashing the bench).
import type { IncomingMessage, ServerResponse } from "node:http";

/** Answers every request that is not a push (a lookup as a Loki holding nothing, the rest 404); false for a push. */
export function answeredUnlessPush(req: IncomingMessage, res: ServerResponse): boolean {
  const path = (req.url ?? "").split("?")[0];
  if (req.method === "POST" && path === "/loki/api/v1/push") return false;
  req.resume();
  if (req.method === "GET" && path === "/loki/api/v1/query_range") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ status: "success", data: { resultType: "streams", result: [] } }));
  } else {
    res.writeHead(404, { "content-type": "text/plain" }).end("404 page not found\n");
  }
  return true;
}
