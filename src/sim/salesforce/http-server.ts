// The simulated org's HTTP face: OAuth token endpoint (JWT bearer verified with jose, or client
// credentials) and userinfo here; everything under /services/data (describeGlobal, SOQL, EventLogFile
// blobs, ApexLog bodies, limits) is the REST simulator's, mounted on the same port.
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

export function createSimHttpServer(state: SimOrgState, rest: SimRestHandler): Server {
  const publicKey: KeyObject | undefined = state.opts.publicKeyPem
    ? createPublicKey(state.opts.publicKeyPem)
    : undefined;

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = new URLSearchParams(await readBody(req));
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
    if (!state.validTokens.has(bearer(req))) {
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

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (path === "/services/oauth2/token") state.tokenRequests++;
    else if (path === "/services/oauth2/userinfo") state.userinfoCalls++;
    else if (/\/sobjects\/?$/.test(path)) state.describeCalls++;
    const fault = state.takeHttpFault(path);
    if (fault) {
      send(res, fault.status, fault.body);
      return;
    }
    if (req.method === "POST" && path === "/services/oauth2/token") return token(req, res);
    if (req.method === "GET" && path === "/services/oauth2/userinfo") {
      userinfo(req, res);
      return;
    }
    if (rest(req, res)) return;
    send(res, 404, [{ message: "The requested resource does not exist", errorCode: "NOT_FOUND" }]);
  }

  // A URI just past 16 KiB must reach the REST handler (and get Salesforce's 414), not Node's 431.
  return createServer({ maxHeaderSize: 64 * 1024 }, (req, res) => {
    route(req, res).catch((err: unknown) => {
      send(res, 500, { error: String(err) });
    });
  });
}
