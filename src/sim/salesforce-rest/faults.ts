// Faults injected at the wire: each rule fires on the next `times` matching requests, in the order
// the rules were added. Tests arm them between (or during) cycles.

export type FaultRoute = "query" | "elf_csv" | "apexlog_body" | "limits" | "describe" | "any";

export type FaultKind =
  /** 403 REQUEST_LIMIT_EXCEEDED */
  | "throttle"
  /** 503 */
  | "server_error"
  /** 401 INVALID_SESSION_ID */
  | "invalid_session"
  /** 200 with an HTML body (a proxy's error page, #94) */
  | "html"
  /** the body starts, then the connection is destroyed after `afterBytes` bytes */
  | "cut"
  /** the connection is destroyed before any response */
  | "reset";

export interface FaultRule {
  route: FaultRoute;
  kind: FaultKind;
  times: number;
  /** For `cut`: bytes of body sent before the connection dies (default 1000). */
  afterBytes?: number;
  /** Only requests whose path and query satisfy this. */
  match?: (pathAndQuery: string) => boolean;
}

export class SimFaults {
  #rules: FaultRule[] = [];
  /** How many faults fired, by kind. */
  readonly fired: Record<FaultKind, number> = {
    throttle: 0,
    server_error: 0,
    invalid_session: 0,
    html: 0,
    cut: 0,
    reset: 0,
  };

  add(rule: FaultRule): this {
    this.#rules.push({ ...rule });
    return this;
  }

  clear(): void {
    this.#rules = [];
  }

  /** Rules still armed. */
  get pending(): number {
    return this.#rules.reduce((n, r) => n + r.times, 0);
  }

  /** The fault this request gets, if any; consumes one shot of it. */
  take(route: Exclude<FaultRoute, "any">, pathAndQuery: string): FaultRule | undefined {
    const rule = this.#rules.find(
      (r) => r.times > 0 && (r.route === "any" || r.route === route) && (r.match?.(pathAndQuery) ?? true),
    );
    if (!rule) return undefined;
    rule.times--;
    this.fired[rule.kind]++;
    return rule;
  }
}
