// The simulated org's HTTP face: OAuth token endpoint (JWT bearer verified with jose, or client
// credentials) and userinfo here; everything under /services/data (describeGlobal, SOQL, EventLogFile
// blobs, ApexLog bodies, limits) is the REST simulator's, mounted on the same port. Several orgs can
// share the port: a token request goes to the org whose client id (or JWT issuer) it names, every
// other request to the org that issued its bearer token.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createPublicKey, type KeyObject } from "node:crypto";
import { decodeJwt, jwtVerify } from "jose";
import type { SimRestHandler } from "../salesforce-rest/handler.ts";
import type { SimOrgState } from "./org-state.ts";

const JWT_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/** Salesforce rejects assertions that live longer than this (plus a little clock slack). */
const MAX_ASSERTION_LIFETIME_S = 180 + 30;

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json" });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function bearer(req: IncomingMessage): string {
  const auth = req.headers.authorization ?? "";
  return auth.startsWith("Bearer ") ? auth.slice(7) : "";
}

/** One org behind the shared port: its state and its REST handler. */
export interface SimHttpOrg {
  state: SimOrgState;
  rest: SimRestHandler;
}

/** The client id a token request names: `client_id` of client credentials, `iss` of a JWT assertion. */
function clientIdOf(form: URLSearchParams): string | undefined {
  if (form.get("grant_type") !== JWT_GRANT) return form.get("client_id") ?? undefined;
  try {
    const iss = decodeJwt(form.get("assertion") ?? "").iss;
    return typeof iss === "string" ? iss : undefined;
  } catch {
    return undefined;
  }
}

export function createSimHttpServer(orgs: readonly SimHttpOrg[]): Server {
  const routed = orgs.map((o) => ({ state: o.state, handle: orgHandler(o.state, o.rest) }));
  const head = routed[0];
  if (!head) throw new Error("sim: an HTTP server needs at least one org");
  // A request no org recognises goes to the first one, which refuses it as any org would.
  const first = head;
  const byBearer = (req: IncomingMessage): OrgHandler => {
    const token = bearer(req);
    return (routed.find((o) => o.state.validTokens.has(token)) ?? first).handle;
  };

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (req.method === "POST" && path === "/services/oauth2/token") {
      const form = new URLSearchParams(await readBody(req));
      const id = clientIdOf(form);
      const org = routed.find((o) => o.state.clientId === id) ?? first;
      await org.handle(req, res, path, form);
      return;
    }
    await byBearer(req)(req, res, path, undefined);
  }

  // A URI just past 16 KiB must reach the REST handler (and get Salesforce's 414), not Node's 431.
  return createServer({ maxHeaderSize: 64 * 1024 }, (req, res) => {
    route(req, res).catch((err: unknown) => {
      send(res, 500, { error: String(err) });
    });
  });
}

type OrgHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  /** The token request's form, already read to find the org. */
  form: URLSearchParams | undefined,
) => Promise<void>;

function orgHandler(state: SimOrgState, rest: SimRestHandler): OrgHandler {
  const publicKey: KeyObject | undefined = state.opts.publicKeyPem
    ? createPublicKey(state.opts.publicKeyPem)
    : undefined;

  async function token(res: ServerResponse, form: URLSearchParams): Promise<void> {
    const grant = form.get("grant_type");
    const grantOk = (): void => {
      send(res, 200, {
        access_token: state.issueToken(),
        instance_url: state.instanceUrl,
        id: `${state.loginUrl}/id/${state.orgId}/005SIM000000001AAA`,
        token_type: "Bearer",
        issued_at: String(Date.now()),
        signature: "c2lt",
      });
    };
    if (grant === JWT_GRANT) {
      const assertion = form.get("assertion") ?? "";
      try {
        state.lastClaims = decodeJwt(assertion);
      } catch {
        state.lastClaims = undefined;
      }
      if (!publicKey) {
        send(res, 400, { error: "invalid_grant", error_description: "jwt bearer not enabled" });
        return;
      }
      try {
        const { payload } = await jwtVerify(assertion, publicKey, {
          algorithms: ["RS256"],
          issuer: state.clientId,
          audience: state.loginUrl,
          requiredClaims: ["exp", "sub"],
        });
        const nowS = Math.floor(Date.now() / 1000);
        if ((payload.exp ?? 0) > nowS + MAX_ASSERTION_LIFETIME_S) {
          send(res, 400, { error: "invalid_grant", error_description: "expiration date too far" });
          return;
        }
        if (state.opts.username && payload.sub !== state.opts.username) {
          send(res, 400, { error: "invalid_grant", error_description: "user hasn't approved this consumer" });
          return;
        }
      } catch {
        send(res, 400, { error: "invalid_grant", error_description: "invalid assertion" });
        return;
      }
      grantOk();
      return;
    }
    if (grant === "client_credentials") {
      const secret = state.opts.clientSecret;
      if (!secret || form.get("client_id") !== state.clientId || form.get("client_secret") !== secret) {
        send(res, 400, { error: "invalid_client", error_description: "invalid client credentials" });
        return;
      }
      grantOk();
      return;
    }
    send(res, 400, { error: "unsupported_grant_type", error_description: "grant type not supported" });
  }

  function userinfo(req: IncomingMessage, res: ServerResponse): void {
    if (!state.accepts(bearer(req))) {
      send(res, 403, "Bad_OAuth_Token");
      return;
    }
    send(res, 200, {
      sub: `${state.loginUrl}/id/${state.orgId}/005SIM000000001AAA`,
      organization_id: state.orgId,
      user_id: "005SIM000000001AAA",
      preferred_username: state.opts.username ?? "integration@example.com",
    });
  }

  return async (req, res, path, form) => {
    if (path === "/services/oauth2/token") state.tokenRequests++;
    else if (path === "/services/oauth2/userinfo") state.userinfoCalls++;
    else if (/\/sobjects\/?$/.test(path)) state.describeCalls++;
    const fault = state.takeHttpFault(path);
    if (fault) {
      send(res, fault.status, fault.body);
      return;
    }
    if (req.method === "POST" && path === "/services/oauth2/token") {
      await token(res, form ?? new URLSearchParams());
      return;
    }
    if (req.method === "GET" && path === "/services/oauth2/userinfo") {
      userinfo(req, res);
      return;
    }
    if (rest(req, res)) return;
    send(res, 404, [{ message: "The requested resource does not exist", errorCode: "NOT_FOUND" }]);
  };
}
