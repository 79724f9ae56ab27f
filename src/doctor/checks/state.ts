// `state`: dispatched on `state.store`; each backend probes its real target (state-file.ts,
// state-object.ts).
import type { Config } from "../../config/schema.ts";
import type { CheckRow } from "../check.ts";
import { checkFileState } from "./state-file.ts";
import { checkObjectState } from "./state-object.ts";

export function checkState(config: Config, signal: AbortSignal): Promise<CheckRow> {
  const state = config.state;
  // The daemon takes the file lock only without a coordinator (wiring.ts); probe what it will use.
  if (state.store === "file") return checkFileState(state.file, config.coordinate.type === "noop");
  return checkObjectState(state, signal);
}
