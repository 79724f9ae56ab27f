// What both running halves of the daemon (app.ts, sharded-app.ts) are and take: app.ts picks one by
// the config, and sharded-app.ts needs the same shapes without importing its chooser.
import type { BuiltCoordinator } from "../coordinate/build.ts";
import type { HostInfo } from "../coordinate/settings.ts";
import type { ShardLeaseSpace } from "../coordinate/sharding/space.ts";
import type { Logger } from "../obs/logger.ts";
import type { Sink } from "../sinks/sink.ts";
import type { Clock } from "../util/clock.ts";
import type { Graph } from "./wiring.ts";

export interface AppDeps {
  clock?: Clock;
  logger?: Logger;
  /** Overrides `service.health_addr` (tests and the demo bind 127.0.0.1:0). */
  healthAddr?: string;
  /** Skip the health server entirely (embedded runs). */
  noHealthServer?: boolean;
  sink?: Sink;
  version?: string;
  /**
   * Polling sources run one cycle and end; with no Pub/Sub topic the run then ends cleanly once
   * everything is delivered and committed (tests, benchmarks). Not a config key on purpose.
   */
  pollOnce?: boolean;
  /** Replaces the configured coordinator (tests drive leadership by hand). */
  coordinator?: BuiltCoordinator;
  /** coordinate.sharding: replaces the lease space built from the config (tests). */
  shardSpace?: ShardLeaseSpace;
  /** Where the process runs, for lease identities (tests). */
  host?: HostInfo;
}

export interface App {
  readonly graph: Graph;
  /** Runs until `signal` aborts or every finite source is done; rejects on a crash. */
  run(signal: AbortSignal): Promise<void>;
  status(): Record<string, unknown>;
  /** The health server's URL once run() started it. */
  healthUrl(): string | undefined;
}
