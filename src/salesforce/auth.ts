// One TokenProvider per org: mints OAuth access tokens (JWT bearer or client credentials), caches
// them against an assumed lifetime, and resolves the org id once (spec A §1).
import { createPrivateKey, type KeyObject } from "node:crypto";
import { metrics, type Counter, type Meter } from "@opentelemetry/api";
import type { Clock } from "../util/clock.ts";
import type { Dispatcher } from "../util/http-dispatchers.ts";
import { systemClock } from "../util/clock.ts";
import { Mutex } from "../util/mutex.ts";
import { fullJitter, retry, type RetryPolicy } from "../util/retry.ts";
import { unreachable } from "../util/proxy-fault.ts";
import { silentLogger, type Logger } from "../obs/logger.ts";
import type { AccessToken, AccessTokenSource } from "./access-token.ts";
import { AuthError, orgPrefix } from "./auth-errors.ts";
import { HttpStatusError, clip, getWithBearer, isTransientHttp, postForm } from "./auth-http.ts";

export { AuthError } from "./auth-errors.ts";

/** `salesforce:` as in the YAML config, with `login_url` derived and secrets resolved. */
export interface SalesforceSettings {
  login_url: string;
  environment: "production" | "sandbox";
  auth_mode: "jwt_bearer" | "client_credentials";
  client_id: string;
  client_secret?: string | null;
  username: string;
  private_key?: string | null;
  api_version: string;
  org_id?: string | null;
  /** Assumed token lifetime in milliseconds (Salesforce returns no expires_in). */
  token_ttl: number;
}

/** `{accessToken, instanceUrl}`: every REST and gRPC call targets instanceUrl, never the login URL. */
export type { AccessToken };

/** What Salesforce clients need from auth (a superset of the REST side's AccessTokenSource). */
export interface TokenSource extends AccessTokenSource {
  token(signal?: AbortSignal): Promise<AccessToken>;
  /** Compare-and-clear (#136): clears only if `failedToken` is still the cached one, or none given. */
  invalidate(failedToken?: string): void;
  orgId(signal?: AbortSignal, opts?: { retryNow?: boolean }): Promise<string>;
  /** A currently valid token is cached; never touches the network. */
  hasToken(): boolean;
}

/** 180 s is Salesforce's hard ceiling on assertion lifetime. */
export const JWT_ASSERTION_LIFETIME_S = 180;
export const TOKEN_REFRESH_SKEW_MS = 60_000;
/** How long a failed org-id resolution is remembered before the next network attempt (#110). */
export const ORG_ID_RETRY_MS = 300_000;
export const AUTH_RETRY_POLICY: RetryPolicy = { maxAttempts: 4, backoffMs: fullJitter(500, 10_000) };

const JWT_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";

interface CachedToken {
  token: AccessToken;
  expiresAt: number;
}

export interface TokenProviderOptions {
  settings: SalesforceSettings;
  /** Org name for messages; "" in single-org mode. */
  orgName?: string;
  clock?: Clock;
  logger?: Logger;
  meter?: Meter;
  /** Deadline of each token and userinfo request (tests shorten it); default SALESFORCE_HTTP_TIMEOUT_MS. */
  httpTimeoutMs?: number;
  /** The org's connections (connections.ts), shared with its REST client; default: one shared set. */
  dispatcher?: Dispatcher;
}

export class TokenProvider implements TokenSource {
  readonly #settings: SalesforceSettings;
  readonly #orgName: string;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #refreshes: Counter;
  readonly #errors: Counter;
  readonly #mintLock = new Mutex();
  readonly #orgIdLock = new Mutex();
  readonly #loginUrl: string;
  readonly #skewMs: number;
  readonly #httpTimeoutMs: number | undefined;
  readonly #dispatcher: Dispatcher | undefined;
  #cached: CachedToken | undefined;
  #key: KeyObject | undefined;
  #orgId: string | undefined;
  #orgIdFailure: { error: AuthError; retryAt: number } | undefined;

  constructor(opts: TokenProviderOptions) {
    this.#settings = opts.settings;
    this.#orgName = opts.orgName ?? "";
    this.#httpTimeoutMs = opts.httpTimeoutMs;
    this.#dispatcher = opts.dispatcher;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger).child({
      component: "auth",
      ...(this.#orgName ? { org: this.#orgName } : {}),
    });
    const meter = opts.meter ?? metrics.getMeter("sf2loki");
    this.#refreshes = meter.createCounter("sf2loki_auth_refreshes", {
      description: "Successful token mints",
    });
    this.#errors = meter.createCounter("sf2loki_auth_errors", { description: "Failed token mints" });
    // At 0 from start-up: the auth panels and alerts read a series on a healthy daemon too (#29).
    this.#errors.add(0);
    this.#loginUrl = opts.settings.login_url.replace(/\/+$/, "");
    // Defence in depth against a tiny token_ttl (#137): never let the skew swallow the lifetime.
    this.#skewMs = Math.min(TOKEN_REFRESH_SKEW_MS, opts.settings.token_ttl / 4);
    const configured = opts.settings.org_id?.trim();
    if (configured) this.#orgId = configured;
  }

  hasToken(): boolean {
    return this.#valid(this.#cached);
  }

  async token(signal?: AbortSignal): Promise<AccessToken> {
    const fast = this.#cached;
    if (this.#valid(fast)) return fast.token;
    // Single-flight: callers queue on the lock and the first one through mints for all of them.
    return this.#mintLock.run(async () => {
      const cached = this.#cached;
      if (this.#valid(cached)) return cached.token;
      const token = await this.#mint(signal);
      this.#cached = { token, expiresAt: this.#clock.now() + this.#settings.token_ttl };
      return token;
    });
  }

  invalidate(failedToken?: string): void {
    if (failedToken === undefined || this.#cached?.token.accessToken === failedToken)
      this.#cached = undefined;
  }

  /**
   * `retryNow`: skip the negative cache (the app's startup loop keeps its own backoff, and the labels
   * wait on this answer).
   */
  async orgId(signal?: AbortSignal, opts: { retryNow?: boolean } = {}): Promise<string> {
    if (this.#orgId !== undefined) return this.#orgId;
    if (!opts.retryNow) this.#throwIfNegativeCached();
    // Its own lock, separate from the mint lock: resolution mints inside it (#109).
    return this.#orgIdLock.run(async () => {
      if (this.#orgId !== undefined) return this.#orgId;
      if (!opts.retryNow) this.#throwIfNegativeCached();
      const hadFailed = this.#orgIdFailure !== undefined;
      try {
        const id = await this.#resolveOrgId(signal);
        this.#orgId = id;
        this.#orgIdFailure = undefined;
        if (hadFailed) this.#log.info({ orgId: id }, "org id resolved");
        return id;
      } catch (err) {
        const error =
          err instanceof AuthError
            ? err
            : new AuthError(`${orgPrefix(this.#orgName)}org id resolution failed: ${String(err)}`, {
                cause: err,
              });
        if (signal?.aborted) throw error;
        this.#orgIdFailure = { error, retryAt: this.#clock.now() + ORG_ID_RETRY_MS };
        this.#log.warn(
          { retryInS: ORG_ID_RETRY_MS / 1000 },
          `${error.message}; grant the 'openid' scope or set salesforce.org_id`,
        );
        throw error;
      }
    });
  }

  #valid(cached: CachedToken | undefined): cached is CachedToken {
    return cached !== undefined && this.#clock.now() < cached.expiresAt - this.#skewMs;
  }

  #throwIfNegativeCached(): void {
    const failure = this.#orgIdFailure;
    if (failure && this.#clock.now() < failure.retryAt) throw failure.error;
  }

  get #tokenUrl(): string {
    return `${this.#loginUrl}/services/oauth2/token`;
  }

  async #mint(signal?: AbortSignal): Promise<AccessToken> {
    try {
      const res = await retry(
        async ({ signal: s }) => {
          const form = await this.#grantForm();
          const result = await postForm(this.#tokenUrl, form, s, this.#httpTimeoutMs, this.#dispatcher);
          if (result.status < 200 || result.status >= 300)
            throw new HttpStatusError(result.status, result.body);
          return result.body;
        },
        {
          policy: AUTH_RETRY_POLICY,
          clock: this.#clock,
          isTransient: isTransientHttp,
          ...(signal ? { signal } : {}),
          onRetry: (err, attempt, delayMs) => {
            this.#log.warn(
              { attempt, delayMs: Math.round(delayMs), err: unreachable(err, this.#loginUrl).text },
              "token request failed; retrying",
            );
          },
        },
      );
      const token = this.#parseToken(res);
      this.#refreshes.add(1);
      this.#log.debug({ instanceUrl: token.instanceUrl }, "token minted");
      return token;
    } catch (err) {
      this.#errors.add(1);
      throw this.#mintError(err);
    }
  }

  async #grantForm(): Promise<Record<string, string>> {
    const s = this.#settings;
    if (s.auth_mode === "client_credentials") {
      return {
        grant_type: "client_credentials",
        client_id: s.client_id,
        client_secret: s.client_secret ?? "",
      };
    }
    return { grant_type: JWT_GRANT, assertion: await this.#assertion() };
  }

  /** A fresh assertion for every request: iss, sub, aud, exp only (no iat, no jti). */
  async #assertion(): Promise<string> {
    const exp = Math.floor(this.#clock.now() / 1000) + JWT_ASSERTION_LIFETIME_S;
    // jose loads with the first assertion: a client_credentials daemon never holds it.
    const { SignJWT } = await import("jose");
    return new SignJWT({
      iss: this.#settings.client_id,
      sub: this.#settings.username,
      aud: this.#loginUrl,
      exp,
    })
      .setProtectedHeader({ alg: "RS256" })
      .sign(this.#signingKey());
  }

  #signingKey(): KeyObject {
    if (this.#key) return this.#key;
    const pem = this.#settings.private_key?.trim();
    if (!pem) {
      throw new AuthError(
        `${orgPrefix(this.#orgName)}jwt_bearer needs a private key: set salesforce.private_key or private_key_file to the PEM whose certificate is uploaded to the connected app`,
      );
    }
    try {
      this.#key = createPrivateKey(pem);
    } catch (err) {
      throw new AuthError(
        `${orgPrefix(this.#orgName)}salesforce.private_key is not a readable PEM private key (${err instanceof Error ? err.message : String(err)}); supply the PKCS#8 or PKCS#1 RSA key matching the connected app's certificate`,
        { cause: err },
      );
    }
    return this.#key;
  }

  #parseToken(body: string): AccessToken {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = undefined;
    }
    const rec = (parsed ?? {}) as Record<string, unknown>;
    const accessToken = rec.access_token;
    const instanceUrl = rec.instance_url;
    if (typeof accessToken !== "string" || !accessToken || typeof instanceUrl !== "string" || !instanceUrl) {
      throw new AuthError(
        `${orgPrefix(this.#orgName)}token response from ${this.#tokenUrl} lacks access_token/instance_url (${clip(body, 200)}); check that login_url points at Salesforce and not at a proxy`,
      );
    }
    return { accessToken, instanceUrl: instanceUrl.replace(/\/+$/, "") };
  }

  #mintError(err: unknown): AuthError {
    if (err instanceof AuthError) return err;
    const where = `${orgPrefix(this.#orgName)}token request to ${this.#tokenUrl}`;
    if (err instanceof HttpStatusError) {
      const oauth = parseOAuthError(err.body);
      if (oauth?.error === "invalid_grant") {
        return new AuthError(
          `${where} was rejected: HTTP ${err.status} invalid_grant (${oauth.description}); check client_id, username (${this.#settings.username || "unset"}), that the connected app's certificate matches the private key, that the user is pre-authorized for the app, and that login_url is this org's (${this.#loginUrl})`,
          { cause: err, status: err.status },
        );
      }
      if (oauth?.error === "invalid_client" || oauth?.error === "invalid_client_id") {
        return new AuthError(
          `${where} was rejected: HTTP ${err.status} ${oauth.error} (${oauth.description}); check client_id and client_secret and that the app's client credentials flow is enabled with a Run As user`,
          { cause: err, status: err.status },
        );
      }
      const attempts = err.status >= 500 ? ` after ${AUTH_RETRY_POLICY.maxAttempts} attempts` : "";
      return new AuthError(`${where} failed${attempts}: HTTP ${err.status} — ${clip(err.body)}`, {
        cause: err,
        status: err.status,
      });
    }
    const { text, hint } = unreachable(err, this.#loginUrl);
    return new AuthError(
      `${where} failed after ${AUTH_RETRY_POLICY.maxAttempts} attempts: ${text}; ${hint}`,
      { cause: err },
    );
  }

  async #resolveOrgId(signal?: AbortSignal): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      const token = await this.token(signal);
      const url = `${token.instanceUrl}/services/oauth2/userinfo`;
      let result;
      try {
        result = await retry(({ signal: s }) => this.#userinfo(url, token.accessToken, s), {
          policy: AUTH_RETRY_POLICY,
          clock: this.#clock,
          isTransient: isTransientHttp,
          ...(signal ? { signal } : {}),
        });
      } catch (err) {
        if (err instanceof HttpStatusError) {
          // A rejected session (#109) is retried once with a fresh token; a plain 403 is a scope problem.
          if (attempt === 1 && isSessionRejection(err)) {
            this.invalidate(token.accessToken);
            continue;
          }
          throw new AuthError(
            `${orgPrefix(this.#orgName)}userinfo at ${url} failed: HTTP ${err.status} — ${clip(err.body)}`,
            { cause: err, status: err.status },
          );
        }
        throw new AuthError(
          `${orgPrefix(this.#orgName)}userinfo at ${url} failed: ${err instanceof Error ? err.message : String(err)}`,
          { cause: err },
        );
      }
      return result;
    }
  }

  async #userinfo(url: string, token: string, signal?: AbortSignal): Promise<string> {
    const res = await getWithBearer(url, token, signal, this.#httpTimeoutMs, this.#dispatcher);
    if (res.status < 200 || res.status >= 300) throw new HttpStatusError(res.status, res.body);
    let id: unknown;
    try {
      id = (JSON.parse(res.body) as Record<string, unknown>).organization_id;
    } catch {
      id = undefined;
    }
    if (typeof id !== "string" || !id) {
      throw new AuthError(
        `${orgPrefix(this.#orgName)}userinfo at ${url} returned no organization_id (${clip(res.body, 200)})`,
      );
    }
    return id;
  }
}

function isSessionRejection(err: HttpStatusError): boolean {
  return err.status === 401 || (err.status === 403 && /INVALID_SESSION_ID|Bad_OAuth_Token/.test(err.body));
}

function parseOAuthError(body: string): { error: string; description: string } | undefined {
  try {
    const rec = JSON.parse(body) as Record<string, unknown>;
    if (typeof rec.error !== "string") return undefined;
    const description = typeof rec.error_description === "string" ? rec.error_description : "no description";
    return { error: rec.error, description };
  } catch {
    return undefined;
  }
}
