// A client's own TLS material (`<section>.tls`): a CA bundle to trust beyond Node's roots, and a client
// certificate with its key. Read and checked where the client is built (the graph, so `--check` sees
// it too), with one line naming the key and what to fix when a file is missing, unreadable, not PEM,
// or the key does not belong to the certificate.
import { X509Certificate, createPrivateKey } from "node:crypto";
import { readFileSync } from "node:fs";
import * as tls from "node:tls";
import { ConfigError, describeError } from "../errors.ts";

/** `tls:` as in the config: paths, each null when unset. */
export interface TlsFiles {
  ca_file: string | null;
  cert_file: string | null;
  key_file: string | null;
}

/** What undici's `connect` (and node:tls) take. */
export interface TlsOptions {
  /** Node's default roots plus the bundle: naming a private CA never stops public ones from working. */
  ca?: string[];
  cert?: string;
  key?: string;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function read(path: string, key: string, what: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === "ENOENT" ? "no such file" : e.code === "EACCES" ? "permission denied" : e.code;
    throw new ConfigError(`cannot read ${key} ${path} (${why ?? describeError(err)}); point it at ${what}`);
  }
}

/** The roots a connection trusts by default: the bundled ones, plus NODE_EXTRA_CA_CERTS. */
function defaultRoots(): string[] {
  // getCACertificates arrived in Node 22.15; before it, the bundled roots are what there is to extend.
  return typeof tls.getCACertificates === "function"
    ? tls.getCACertificates("default")
    : [...tls.rootCertificates];
}

function caBundle(path: string, key: string): string[] {
  const what = "a PEM file of the CA certificate(s) that signed the server's certificate";
  const pems = read(path, key, what).match(PEM_CERT) ?? [];
  if (pems.length === 0)
    throw new ConfigError(`${key} ${path} holds no PEM certificate; point it at ${what}`);
  for (const pem of pems) {
    try {
      new X509Certificate(pem);
    } catch (err) {
      throw new ConfigError(
        `${key} ${path} holds a certificate that does not parse (${describeError(err)}); ${what}`,
      );
    }
  }
  return [...defaultRoots(), ...pems];
}

function clientPair(certPath: string, keyPath: string, section: string): { cert: string; key: string } {
  const cert = read(certPath, `${section}.cert_file`, "the client certificate (PEM)");
  const key = read(keyPath, `${section}.key_file`, "the client certificate's private key (PEM)");
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw new ConfigError(
      `${section}.cert_file ${certPath} is not a PEM certificate (${describeError(err)}); point it at the client certificate`,
    );
  }
  let matches: boolean;
  try {
    matches = x509.checkPrivateKey(createPrivateKey(key));
  } catch (err) {
    throw new ConfigError(
      `${section}.key_file ${keyPath} is not an unencrypted PEM private key (${describeError(err)}); point it at the key of ${section}.cert_file`,
    );
  }
  if (!matches) {
    throw new ConfigError(
      `${section}.key_file ${keyPath} is not the key of ${section}.cert_file ${certPath}; point both at one certificate's files`,
    );
  }
  return { cert, key };
}

/** Reads `<section>` (`sink.loki.tls`); undefined when nothing is set. Throws ConfigError naming the key. */
export function readTlsFiles(files: TlsFiles | undefined, section: string): TlsOptions | undefined {
  if (!files) return undefined;
  const set = (v: string | null): string | undefined => (v !== null && v.trim() !== "" ? v : undefined);
  const ca = set(files.ca_file);
  const cert = set(files.cert_file);
  const key = set(files.key_file);
  if ((cert === undefined) !== (key === undefined)) {
    const [has, lacks] = cert === undefined ? ["key_file", "cert_file"] : ["cert_file", "key_file"];
    throw new ConfigError(
      `${section}.${has} is set without ${section}.${lacks}; a client certificate needs both, or neither`,
    );
  }
  if (ca === undefined && cert === undefined) return undefined;
  return {
    ...(ca === undefined ? {} : { ca: caBundle(ca, `${section}.ca_file`) }),
    ...(cert === undefined || key === undefined ? {} : clientPair(cert, key, section)),
  };
}
