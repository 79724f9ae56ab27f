// The Loki sink's public face for the composition root; everything else in this folder is internal.
export { LokiSink, createLokiSink, type LokiSinkDeps } from "./sink.ts";
export type { LokiSinkSettings } from "./settings.ts";
export { LABEL_ALLOWLIST, RESERVED_LABELS, guardStaticLabels } from "../receiving-loki/labels.ts";
export { LOKI_DEFAULT_LIMITS, type LokiLimits } from "../receiving-loki/limits.ts";
