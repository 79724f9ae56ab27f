// The storage account a `state.azure` / `coordinate.azure_lease` section names, read from its
// connection string or account_url without the Azure SDK (41 MiB of RSS when loaded): building a store
// and `--check` stay SDK-free. The reading follows @azure/storage-blob 12's own (extractConnection-
// StringParts, getAccountNameFromUrl), so the name in messages is the one the client will use.
import { ConfigError, describeError } from "../../errors.ts";
import type { AzureStateSettings } from "../settings.ts";

/** What `UseDevelopmentStorage=true` stands for: Azurite's well-known account on 127.0.0.1:10000. */
const DEVELOPMENT_BLOB_ENDPOINT = "http://127.0.0.1:10000/devstoreaccount1";
/** Ports on which the SDK reads the account from the path (Azurite and the storage emulator). */
const PATH_STYLE_PORTS = new Set([
  ...["10000", "10001", "10002", "10003", "10004", "10100", "10101", "10102", "10103", "10104"],
  ...["11000", "11001", "11002", "11003", "11004", "11100", "11101", "11102", "11103", "11104"],
]);
const ACCOUNT_SUFFIXES = ["-secondary-ipv6", "-secondary-dualstack", "-ipv6", "-dualstack", "-secondary"];
const IP_STYLE_HOST =
  /^.*:.*:.*$|^(localhost|host.docker.internal)(:[0-9]+)?$|^(\d|[1-9]\d|1\d\d|2[0-4]\d|25[0-5])(\.(\d|[1-9]\d|1\d\d|2[0-4]\d|25[0-5])){3}(:[0-9]+)?$/;

/**
 * The storage account the settings name, without any network call or credential. Throws ConfigError
 * naming the key when the credential's inputs are missing or unusable.
 */
export function azureAccountName(settings: AzureStateSettings, section: string): string {
  return accountOfUrl(azureBlobEndpoint(settings, section));
}

/** The blob service URL the client will talk to, from the connection string or account_url. */
export function azureBlobEndpoint(settings: AzureStateSettings, section: string): string {
  try {
    const url =
      settings.credential === "connection_string"
        ? endpointOfConnectionString(connectionString(settings, section))
        : accountUrl(settings, section);
    if (!URL.canParse(url)) throw new TypeError("Invalid URL");
    return url;
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw invalid(section, settings.credential, err);
  }
}

export function connectionString(settings: AzureStateSettings, section: string): string {
  const value = settings.connection_string?.trim();
  if (!value) {
    throw new ConfigError(
      `${section}.credential is 'connection_string' but neither ${section}.connection_string nor ` +
        `${section}.connection_string_file is set; set one, or use credential: default with account_url`,
    );
  }
  return value;
}

export function accountUrl(settings: AzureStateSettings, section: string): string {
  const value = settings.account_url?.trim();
  if (!value) {
    throw new ConfigError(
      `${section}.credential is 'default' but ${section}.account_url is empty; set it to ` +
        `https://<account>.blob.core.windows.net`,
    );
  }
  return value;
}

function endpointOfConnectionString(text: string): string {
  const conn = text.startsWith("UseDevelopmentStorage=true")
    ? `AccountKey=x;BlobEndpoint=${DEVELOPMENT_BLOB_ENDPOINT}`
    : text;
  let endpoint = valueIn(conn, "BlobEndpoint");
  if (endpoint.endsWith("/")) endpoint = endpoint.slice(0, -1);
  if (conn.includes("DefaultEndpointsProtocol=") && conn.includes("AccountKey=")) {
    const account = valueIn(conn, "AccountName");
    if (!endpoint) {
      const protocol = valueIn(conn, "DefaultEndpointsProtocol").toLowerCase();
      if (protocol !== "https" && protocol !== "http") {
        throw new Error("Invalid DefaultEndpointsProtocol in the provided Connection String");
      }
      const suffix = valueIn(conn, "EndpointSuffix");
      if (!suffix) throw new Error("Invalid EndpointSuffix in the provided Connection String");
      endpoint = `${protocol}://${account}.blob.${suffix}`;
    }
    if (!account) throw new Error("Invalid AccountName in the provided Connection String");
    if (Buffer.from(valueIn(conn, "AccountKey"), "base64").length === 0) {
      throw new Error("Invalid AccountKey in the provided Connection String");
    }
    return endpoint;
  }
  if (!endpoint) throw new Error("Invalid BlobEndpoint in the provided SAS Connection String");
  if (!valueIn(conn, "SharedAccessSignature")) {
    throw new Error("Invalid SharedAccessSignature in the provided SAS Connection String");
  }
  return endpoint;
}

function valueIn(conn: string, name: string): string {
  for (const element of conn.split(";")) {
    const e = element.trim();
    if (e.startsWith(name)) return new RegExp(`${name}=(.*)`).exec(e)?.[1] ?? "";
  }
  return "";
}

/** `<account>.blob.<suffix>`, or the first path segment on an IP-style (emulator) endpoint; else "". */
function accountOfUrl(url: string): string {
  const parsed = new URL(url);
  const labels = parsed.hostname.split(".");
  if (labels[1] === "blob") {
    const name = labels[0]!;
    const suffix = ACCOUNT_SUFFIXES.find((s) => name.endsWith(s));
    return suffix ? name.slice(0, -suffix.length) : name;
  }
  const ipStyle =
    IP_STYLE_HOST.test(parsed.host) || (parsed.port !== "" && PATH_STYLE_PORTS.has(parsed.port));
  return ipStyle ? (parsed.pathname.split("/")[1] ?? "") : "";
}

function invalid(section: string, credential: string, err: unknown): ConfigError {
  const what = credential === "connection_string" ? "connection string" : "account_url";
  return new ConfigError(
    `${section}: the ${what} cannot be used (${describeError(err)}); copy it again from the storage account`,
  );
}
