// A conditional write of a probe object beside a real one (create-only: the precondition the stores
// and object leases rely on) and its delete, through the state layer's own S3 and GCS adapters and
// client settings. Shared by the `state` and `coordinator` rows.
import { DeleteObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { Storage } from "@google-cloud/storage";
import { describeError } from "../../errors.ts";
import { GcsBackend, gcsStorageOptions } from "../../state/gcs-store.ts";
import type { ObjectBackend } from "../../state/object-backend.ts";
import { S3Backend, s3ClientConfig } from "../../state/s3-store.ts";
import type { GcsStateSettings, S3StateSettings } from "../../state/settings.ts";

export const PROBE_SUFFIX = ".sf2loki-doctor-probe";

export type ProbeTarget =
  | { kind: "s3"; settings: S3StateSettings; section: string }
  | { kind: "gcs"; settings: GcsStateSettings; section: string };

interface Probe {
  backend: ObjectBackend;
  location: string;
  remove: (signal: AbortSignal) => Promise<void>;
}

function probeFor(target: ProbeTarget): Probe {
  if (target.kind === "s3") {
    const settings = { ...target.settings, key: target.settings.key + PROBE_SUFFIX };
    return {
      backend: new S3Backend(settings),
      location: `s3://${settings.bucket}/${settings.key}`,
      remove: async (signal) => {
        const client = new S3Client(s3ClientConfig(settings));
        try {
          await client.send(new DeleteObjectCommand({ Bucket: settings.bucket, Key: settings.key }), {
            abortSignal: signal,
          });
        } finally {
          client.destroy();
        }
      },
    };
  }
  const settings = { ...target.settings, object_name: target.settings.object_name + PROBE_SUFFIX };
  return {
    backend: new GcsBackend(settings, { configSection: target.section }),
    location: `gs://${settings.bucket}/${settings.object_name}`,
    remove: async () => {
      await new Storage(gcsStorageOptions(settings))
        .bucket(settings.bucket)
        .file(settings.object_name)
        .delete();
    },
  };
}

/** When the SDK found no credentials at all, the env vars (or files) it looks for. */
export function credentialHint(kind: "s3" | "gcs", text: string): string {
  if (!/credential|Could not load|default credentials/i.test(text)) return "";
  return kind === "s3"
    ? "; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or give the pod an IAM role (IRSA)"
    : "; set GOOGLE_APPLICATION_CREDENTIALS or state.gcs.service_file, or give the pod a workload identity";
}

/** Undefined on success with the probe's location in `where`; else one line naming the permission. */
export async function probeObject(
  target: ProbeTarget,
  signal: AbortSignal,
): Promise<{ location: string; problem: string | undefined }> {
  const probe = probeFor(target);
  const body = new TextEncoder().encode(
    JSON.stringify({ doctor: `sf2loki doctor probe ${new Date().toISOString()}` }),
  );
  try {
    try {
      await probe.backend.put(body, { kind: "create" }, signal);
    } catch (err) {
      if (probe.backend.classify(err) !== "precondition-failed") throw err;
      // A probe left by an interrupted run: overwrite it under its own version, still conditional.
      const current = await probe.backend.get(signal);
      await probe.backend.put(
        body,
        current ? { kind: "match", token: current.token } : { kind: "create" },
        signal,
      );
    }
    await probe.remove(signal);
    return { location: probe.location, problem: undefined };
  } catch (err) {
    const denied = probe.backend.classify(err) === "access-denied";
    const problem = denied
      ? `access denied (${describeError(err)}): the credentials need ${probe.backend.hints.permissions}`
      : describeError(err);
    return {
      location: probe.location,
      problem: `probe write/delete of ${probe.location} failed: ${problem}`,
    };
  } finally {
    await probe.backend.close();
  }
}
