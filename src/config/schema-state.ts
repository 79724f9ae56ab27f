// `state:` and `coordinate:` — checkpoints and leadership (spec C §1, §2).
import { z } from "zod";
import { bool, duration, meta, oneOf, optStr, secret, secretFile, section, str } from "./fields.ts";

const s3Location = {
  bucket: str("", "Bucket (required when this backend is used)."),
  region: optStr("AWS region; null uses the SDK default chain."),
  endpoint_url: optStr("S3-compatible endpoint (MinIO, R2...); null is AWS.", ["http://minio:9000"]),
  force_path_style: meta(z.boolean().nullable().default(null), {
    description: "Path-style addressing; null means true when endpoint_url is set.",
  }),
};

const gcsLocation = {
  bucket: str("", "Bucket (required when this backend is used)."),
  service_file: optStr("Service account JSON; null uses Application Default Credentials."),
  endpoint_url: optStr("Custom endpoint (an emulator); STORAGE_EMULATOR_HOST is honoured too."),
};

const azureLocation = {
  account_url: optStr("Blob endpoint of the storage account; required with credential default.", [
    "https://myaccount.blob.core.windows.net",
  ]),
  container: str("", "Container (required when this backend is used; sf2loki does not create it)."),
  credential: oneOf(
    ["default", "connection_string"],
    "default",
    "default: the DefaultAzureCredential chain (workload identity, managed identity, az login); connection_string: the connection string below.",
  ),
  connection_string: secret("Storage account connection string. Prefer connection_string_file."),
  connection_string_file: secretFile("File holding the connection string.", [
    "/etc/sf2loki/secrets/azure-connection-string",
  ]),
};

interface AzureLocation {
  container: string;
  credential: string;
  account_url: string | null;
}

/** The cross-field rules of an Azure block (`state.azure`, `coordinate.azure_lease`); `at` is its path. */
function checkAzure(a: AzureLocation, ctx: z.RefinementCtx, at: string[], what: string): void {
  const issue = (key: string, message: string) => {
    ctx.addIssue({ code: "custom", path: [...at, key], message });
  };
  if (a.container === "") issue("container", `${what} but the container is empty`);
  if (a.credential === "default" && !a.account_url)
    issue("account_url", "credential 'default' needs account_url (https://<account>.blob.core.windows.net)");
  if (a.credential === "connection_string" && a.account_url)
    issue(
      "account_url",
      "credential 'connection_string' takes the endpoint from the string; leave account_url empty",
    );
}

const state = z
  .strictObject({
    store: oneOf(["file", "s3", "gcs", "azure"], "file", "Checkpoint backend."),
    file: section(
      z.strictObject({
        path: str("/var/lib/sf2loki/state.json", "Checkpoint file (its directory must be writable)."),
      }),
      "Local file store.",
    ),
    s3: section(
      z.strictObject({
        ...s3Location,
        key: str("sf2loki/state.json", "Object key of the checkpoint document."),
      }),
      "S3 store (conditional writes).",
    ),
    gcs: section(
      z.strictObject({
        ...gcsLocation,
        object_name: str("sf2loki/state.json", "Object name of the checkpoint document."),
      }),
      "GCS store (generation preconditions).",
    ),
    azure: section(
      z.strictObject({
        ...azureLocation,
        blob_name: str("sf2loki/state.json", "Blob name of the checkpoint document."),
      }),
      "Azure Blob Storage store (ETag preconditions).",
    ),
  })
  .superRefine((s, ctx) => {
    if (s.store === "s3" && s.s3.bucket === "")
      ctx.addIssue({
        code: "custom",
        path: ["s3", "bucket"],
        message: "state.store is 's3' but state.s3.bucket is empty",
      });
    if (s.store === "gcs" && s.gcs.bucket === "")
      ctx.addIssue({
        code: "custom",
        path: ["gcs", "bucket"],
        message: "state.store is 'gcs' but state.gcs.bucket is empty",
      });
    if (s.store === "azure") checkAzure(s.azure, ctx, ["azure"], "state.store is 'azure'");
  });

export const stateField = section(state, "Checkpoint storage.");

const ttl = duration("30s", "A lease not renewed for this long may be taken over.");
const renewInterval = duration(
  "10s",
  "How often the leader renews (2 × renew_interval must be below the ttl).",
);

function renewCheck(ttlKey: string) {
  return (l: Record<string, unknown>, ctx: z.RefinementCtx) => {
    const ttl = l[ttlKey] as number;
    const renew = l["renew_interval"] as number;
    if (2 * renew >= ttl)
      ctx.addIssue({
        code: "custom",
        path: ["renew_interval"],
        message: `2 × renew_interval (${renew / 1000}s) must be less than ${ttlKey} (${ttl / 1000}s)`,
      });
  };
}

const holderId = str("", "This replica's identity; empty means <hostname>-<pid>.");
const objectHolderId = str(
  "",
  "This replica's identity; empty means <hostname>-<pid>-<random>, since serverless replicas can share a hostname and pid.",
);

const coordinate = z.strictObject({
  type: oneOf(
    ["noop", "file_lease", "k8s_lease", "s3_lease", "gcs_lease", "azure_lease"],
    "noop",
    "Leader election: noop (single replica), or a lease for active-passive HA.",
  ),
  file_lease: section(
    z
      .strictObject({
        path: str("/var/lib/sf2loki/leader.lease", "Lease file on storage every replica shares."),
        ttl,
        renew_interval: renewInterval,
        holder_id: holderId,
      })
      .superRefine(renewCheck("ttl")),
    "Lease file on a shared volume.",
  ),
  k8s_lease: section(
    z
      .strictObject({
        namespace: str("default", "Namespace of the Lease."),
        name: str("sf2loki-leader", "Name of the coordination.k8s.io/v1 Lease."),
        identity: str("", "This replica's identity; empty means $HOSTNAME, then <hostname>-<pid>."),
        lease_duration: ttl,
        renew_interval: renewInterval,
        kubeconfig: optStr("Kubeconfig path; null uses the in-cluster service account."),
      })
      .superRefine(renewCheck("lease_duration")),
    "Kubernetes Lease.",
  ),
  s3_lease: section(
    z
      .strictObject({
        ...s3Location,
        key: str("sf2loki/leader.lease", "Object key of the lease."),
        ttl,
        renew_interval: renewInterval,
        holder_id: objectHolderId,
      })
      .superRefine(renewCheck("ttl")),
    "Lease object in S3 (HA without Kubernetes or a shared volume).",
  ),
  gcs_lease: section(
    z
      .strictObject({
        ...gcsLocation,
        object_name: str("sf2loki/leader.lease", "Object name of the lease."),
        ttl,
        renew_interval: renewInterval,
        holder_id: objectHolderId,
      })
      .superRefine(renewCheck("ttl")),
    "Lease object in GCS.",
  ),
  azure_lease: section(
    z
      .strictObject({
        ...azureLocation,
        blob_name: str("sf2loki/leader.lease", "Blob name of the lease."),
        ttl,
        renew_interval: renewInterval,
        holder_id: objectHolderId,
      })
      .superRefine(renewCheck("ttl")),
    "Lease blob in Azure Blob Storage (a lease document with ETag preconditions, not an Azure blob lease).",
  ),
  sharding: section(
    z.strictObject({
      enabled: bool(
        false,
        "Shard the orgs across replicas instead of one active leader: every org (orgs[].name, or the " +
          "single org as 'default') gets its own lease (k8s: <name>-<org>; S3/GCS/Azure: <key>/<org>) " +
          "and its own checkpoint document (the state path with -<org> before its extension, seeded " +
          "from the shared document on first use); each replica holds ceil(orgs / live replicas). " +
          "Needs k8s_lease, s3_lease, gcs_lease or azure_lease, and the 'list' permission on leases " +
          "or the bucket.",
      ),
    }),
    "Orgs sharded across replicas, each shard leased and fenced on its own.",
  ),
});

export const coordinateField = section(
  coordinate.superRefine((c, ctx) => {
    if (c.type === "s3_lease" && c.s3_lease.bucket === "")
      ctx.addIssue({
        code: "custom",
        path: ["s3_lease", "bucket"],
        message: "coordinate.type is 's3_lease' but the bucket is empty",
      });
    if (c.type === "gcs_lease" && c.gcs_lease.bucket === "")
      ctx.addIssue({
        code: "custom",
        path: ["gcs_lease", "bucket"],
        message: "coordinate.type is 'gcs_lease' but the bucket is empty",
      });
    if (c.type === "azure_lease")
      checkAzure(c.azure_lease, ctx, ["azure_lease"], "coordinate.type is 'azure_lease'");
    if (c.sharding.enabled && (c.type === "noop" || c.type === "file_lease"))
      ctx.addIssue({
        code: "custom",
        path: ["sharding", "enabled"],
        message:
          `coordinate.sharding needs a lease every replica can list; coordinate.type '${c.type}' has none: ` +
          "use k8s_lease, s3_lease, gcs_lease or azure_lease, or turn sharding off",
      });
  }),
  "Active-passive leader election.",
);
