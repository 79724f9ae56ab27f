// Lease names for shards and members. Kubernetes object names must be DNS-1123 subdomains (lowercase
// alphanumerics, '-' and '.', at most 253 characters, alphanumeric at both ends); label values at most
// 63 characters of [A-Za-z0-9._-]. An org or identity that does not fit is lowercased, every other
// character becomes '-', and a short hash of the original is appended so two names that sanitise alike
// (`Acme_EU`, `acme-eu`) never share a Lease.
import { createHash } from "node:crypto";

const DNS_MAX = 253;
const LABEL_MAX = 63;

/** `text` as a DNS-1123 subdomain fragment; unchanged when it already is one. */
export function dnsSafe(text: string, max = DNS_MAX): string {
  if (text.length <= max && /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(text)) return text;
  const hash = createHash("sha256").update(text).digest("hex").slice(0, 8);
  const cleaned = text
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, "-")
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, "");
  return `${cleaned.slice(0, max - hash.length - 1)}${cleaned ? "-" : ""}${hash}`;
}

/** `<name>-<org>`: the Lease of one shard. */
export function k8sShardLeaseName(name: string, shard: string): string {
  return dnsSafe(`${name}-${dnsSafe(shard)}`);
}

/** `<name>-member-<identity>`: one replica's membership Lease. */
export function k8sMemberLeaseName(name: string, identity: string): string {
  return dnsSafe(`${name}-member-${dnsSafe(identity)}`);
}

/** The label every Lease of one sharded deployment carries (`sf2loki.io/lease-set=<name>`). */
export const LEASE_SET_LABEL = "sf2loki.io/lease-set";
/** `shard` or `member`. */
export const LEASE_ROLE_LABEL = "sf2loki.io/lease-role";

export function labelSafe(text: string): string {
  return dnsSafe(text, LABEL_MAX);
}

/** `<prefix>/<org>` and `<prefix>/members/<identity>` in a bucket; '/' in either becomes '_'. */
export function objectShardKey(prefix: string, shard: string): string {
  return `${prefix}/${shard.replaceAll("/", "_")}`;
}

export function objectMembersPrefix(prefix: string): string {
  return `${prefix}/members/`;
}

export function objectMemberKey(prefix: string, identity: string): string {
  return `${objectMembersPrefix(prefix)}${identity.replaceAll("/", "_")}`;
}
