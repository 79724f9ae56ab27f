// What every polling source is built from besides its own settings block, and what it builds from it.
import { metrics, type Meter } from "@opentelemetry/api";
import { compileTransforms, type TransformRule, type Transforms } from "../../egress/transforms.ts";
import { silentLogger, type Logger } from "../../obs/logger.ts";
import type { AccessTokenSource } from "../../salesforce/access-token.ts";
import { RestClient } from "../../salesforce/rest.ts";
import { systemClock, type Clock } from "../../util/clock.ts";
import { CycleHealth } from "./cycle.ts";
import { EntryShaper } from "./entry.ts";
import type { SourceName } from "../source.ts";

export interface PollingSourceDeps {
  tokens: AccessTokenSource;
  /** `salesforce.api_version`, e.g. `60.0`. */
  apiVersion: string;
  /** The global `sink.loki.structured_metadata_fields`. */
  structuredMetadataFields: readonly string[];
  /** `sources.transform_salt` (resolved secret) for `hash` rules. */
  transformSalt?: string | null;
  clock?: Clock;
  logger?: Logger;
  meter?: Meter;
  /** End after one cycle (tests, backfill). */
  once?: boolean;
  /** One REST client per org, shared by its sources; built from `tokens` when absent. */
  rest?: RestClient;
}

/** What each polling source builds from its deps, the same way for all three. */
export interface PollingKit {
  clock: Clock;
  log: Logger;
  meter: Meter;
  once: boolean;
  rest: RestClient;
  shaper: EntryShaper;
  transforms: Transforms;
  health: CycleHealth;
  globalFields: readonly string[];
}

export function pollingKit(
  deps: PollingSourceDeps,
  source: SourceName,
  rules: readonly TransformRule[],
): PollingKit {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? silentLogger;
  const log = logger.child({ component: source });
  const meter = deps.meter ?? metrics.getMeter("sf2loki");
  return {
    clock,
    log,
    meter,
    once: deps.once ?? false,
    rest:
      deps.rest ?? new RestClient({ tokens: deps.tokens, apiVersion: deps.apiVersion, clock, logger, meter }),
    shaper: new EntryShaper(source, clock, meter),
    transforms: compileTransforms(rules, { source, salt: deps.transformSalt ?? null, meter }),
    health: new CycleHealth(source, log, meter),
    globalFields: deps.structuredMetadataFields,
  };
}
