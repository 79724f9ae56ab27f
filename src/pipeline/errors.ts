// Errors the pipeline raises itself. Sink and store errors pass through unchanged.
import { Sf2LokiError } from "../errors.ts";

/** `run()` was called while a previous run of the same pipeline had not finished. */
export class PipelineBusyError extends Sf2LokiError {
  constructor() {
    super(
      "SF2LOKI_PIPELINE_BUSY",
      "The pipeline is already running; await the current run() before starting another.",
    );
  }
}

/** The reason handed to every wait and push when a run is torn down (crash or grace expiry). */
export class PipelineCancelledError extends Sf2LokiError {
  constructor(why: string) {
    super("SF2LOKI_PIPELINE_CANCELLED", `Pipeline run cancelled: ${why}.`);
  }
}
