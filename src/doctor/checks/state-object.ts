// `state` for S3 and GCS: the real document read and parsed by the daemon's own store, then a
// conditional probe write and delete in the same bucket (object-probe.ts).
import { describeError } from "../../errors.ts";
import { buildStore } from "../../state/build.ts";
import type { StateSettings } from "../../state/settings.ts";
import { fail, pass, type CheckRow } from "../check.ts";
import { credentialHint, probeObject } from "./object-probe.ts";

export async function checkObjectState(state: StateSettings, signal: AbortSignal): Promise<CheckRow> {
  const store = buildStore(state);
  let keys: number;
  try {
    keys = Object.keys(await store.snapshot()).length;
  } catch (err) {
    const text = describeError(err);
    return fail(
      "state",
      `reading ${store.location} failed: ${text}${credentialHint(state.store === "s3" ? "s3" : "gcs", text)}`,
    );
  } finally {
    await store.close().catch(() => undefined);
  }
  const probe = await probeObject(
    state.store === "s3"
      ? { kind: "s3", settings: state.s3, section: "state.s3" }
      : { kind: "gcs", settings: state.gcs, section: "state.gcs" },
    signal,
  );
  if (probe.problem) return fail("state", probe.problem);
  return pass(
    "state",
    `${store.location} is readable (${keys} checkpoint(s)); conditional write and delete of ${probe.location} OK`,
  );
}
