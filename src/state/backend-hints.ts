// What an operator is told about each object backend (where the document lives, the config key that
// picks it, how to remove it, which permissions it needs), worked out from the settings alone. Kept
// apart from the adapters so building a store, and `--check`, never load a cloud SDK.
import { azureAccountName } from "./azure/account.ts";
import type { ObjectStoreHints } from "./errors.ts";
import type { AzureStateSettings, GcsStateSettings, S3StateSettings } from "./settings.ts";

export function s3Hints(settings: S3StateSettings): ObjectStoreHints {
  const location = `s3://${settings.bucket}/${settings.key}`;
  const endpointFlag = settings.endpoint_url ? ` --endpoint-url ${settings.endpoint_url}` : "";
  return {
    location,
    configKey: "state.s3.key",
    noun: "key",
    removeCommand: `aws s3 rm ${location}${endpointFlag}`,
    scopeName: settings.bucket,
    createCommand: `aws s3 mb s3://${settings.bucket}${endpointFlag}`,
    permissions:
      "s3:GetObject, s3:PutObject and s3:ListBucket (without ListBucket a missing object reads as 403, not 404)",
  };
}

/** `section`: where the settings sit in the config (`state.gcs`, `coordinate.gcs_lease`). */
export function gcsHints(settings: GcsStateSettings, section: string): ObjectStoreHints {
  const location = `gs://${settings.bucket}/${settings.object_name}`;
  return {
    location,
    configKey: `${section}.object_name`,
    noun: "object",
    removeCommand: `gcloud storage rm ${location}`,
    scopeName: settings.bucket,
    createCommand: `gcloud storage buckets create gs://${settings.bucket}`,
    permissions:
      "storage.objects.get, storage.objects.create and storage.objects.delete (overwriting an object needs " +
      "delete; roles/storage.objectUser has all three)",
  };
}

/** `section`: `state.azure` or `coordinate.azure_lease`. Throws ConfigError for an unusable credential. */
export function azureHints(settings: AzureStateSettings, section: string): ObjectStoreHints {
  const account = azureAccountName(settings, section);
  const { container, blob_name: blob } = settings;
  return {
    location: `azure://${account}/${container}/${blob}`,
    configKey: `${section}.blob_name`,
    noun: "blob",
    removeCommand:
      `az storage blob delete --account-name ${account} --container-name ${container} --name ${blob}` +
      (settings.credential === "default" ? " --auth-mode login" : ""),
    permissions:
      "the Storage Blob Data Contributor role (or, with a connection string, an account key or a SAS " +
      "allowing read, create and write)",
    scope: "container",
    scopeName: container,
    createCommand:
      `az storage container create --account-name ${account} --name ${container}` +
      (settings.credential === "default" ? " --auth-mode login" : ""),
    busyCause: "409 Conflict, or a blob lease held by another client",
  };
}
