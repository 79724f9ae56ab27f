// `tls:` under sink.loki, sink.otlp and salesforce: a client's own CA bundle and client certificate.
// The files are read and checked where the client is built (src/util/tls-files.ts), so `--check`
// reports a missing or mismatched file by its key. No examples: the example config keeps them null,
// so a copied example never names files that are not there.
import { z } from "zod";
import { optStr, section } from "./fields.ts";

/** `peer` names who presents the server certificate (`Loki`), `scope` which of its calls it covers. */
export function tlsSection(peer: string, scope: string) {
  return section(
    z.strictObject({
      ca_file: optStr(
        `PEM bundle of the CA(s) that signed ${peer}'s server certificate, trusted in addition to Node's roots (and NODE_EXTRA_CA_CERTS).`,
      ),
      cert_file: optStr(`Client certificate (PEM) presented to ${peer} (mutual TLS); needs key_file.`),
      key_file: optStr("The client certificate's unencrypted private key (PEM); needs cert_file."),
    }),
    `TLS towards ${peer} (${scope}): a private CA, a client certificate. Through a proxy it applies inside the tunnel (docs/deploy.md, Behind a proxy).`,
  );
}
