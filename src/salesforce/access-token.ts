// The only thing the REST side needs from auth: a current token for an instance, and a way to say
// "this one was rejected". The lead adapts the real TokenProvider to this; tests use the static one.

export interface AccessToken {
  readonly accessToken: string;
  readonly instanceUrl: string;
}

export interface AccessTokenSource {
  /** A token that is believed valid now; may mint (and so may wait or fail). */
  token(signal?: AbortSignal): Promise<AccessToken>;
  /** `accessToken` was refused by Salesforce: drop it if it is still the cached one (compare-and-clear). */
  invalidate(accessToken: string): void;
}

/**
 * A fixed instance with a token that can be rotated: each `invalidate` of the current token moves to
 * `mint()`'s next value. Used by the simulator-backed tests, the bench and `sf2loki demo`.
 */
export function staticAccessTokens(
  instanceUrl: string,
  mint: () => string = () => "sim-token",
): AccessTokenSource & { readonly mints: number } {
  let current: string | undefined;
  let mints = 0;
  return {
    get mints() {
      return mints;
    },
    token() {
      if (current === undefined) {
        current = mint();
        mints++;
      }
      return Promise.resolve({ accessToken: current, instanceUrl });
    },
    invalidate(accessToken) {
      if (accessToken === current) current = undefined;
    },
  };
}
