// Rate-limited logging for 401/403/404: the pipeline retries them forever while an operator fixes
// credentials, so log the 1st and every 10th consecutive failure, and say when it recovers.
import type { Logger } from "../../obs/logger.ts";

export class AuthFailureLog {
  #consecutive = 0;
  readonly #logger: Logger;
  readonly #where: string;
  readonly #key: string;
  readonly #peer: string;

  /** `peer` names who answers, for messages: `Loki`, `the OTLP receiver`. */
  constructor(logger: Logger, where: string, key = "sink.loki", peer = "Loki") {
    this.#logger = logger;
    this.#where = where;
    this.#key = key;
    this.#peer = peer;
  }

  failed(status: number, detail: string): void {
    this.#consecutive++;
    const n = this.#consecutive;
    if (n !== 1 && n % 10 !== 0) return;
    this.#logger.error(
      { status, consecutiveFailures: n, detail },
      `${this.#peer} at ${this.#where} refused the push with HTTP ${status}: check ${this.#key}.url, tenant_id and ` +
        `auth_token; batches and checkpoints are held and retried until it is fixed`,
    );
  }

  succeeded(): void {
    if (this.#consecutive === 0) return;
    this.#logger.info(
      { consecutiveFailures: this.#consecutive },
      `${this.#peer} at ${this.#where} accepts pushes again after ${this.#consecutive} refused attempts`,
    );
    this.#consecutive = 0;
  }
}
