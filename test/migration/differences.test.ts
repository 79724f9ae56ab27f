// The smaller deliberate differences from the Python sf2loki that docs/migrating-from-python.md lists
// and no other test pins. Each case names the doc's bullet.
import assert from "node:assert/strict";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, it } from "node:test";
import { validateConfig } from "../../src/config/load.ts";
import { ConfigError } from "../../src/errors.ts";
import { NO_TRANSFORMS } from "../../src/egress/transforms.ts";
import { csvRowBatches } from "../../src/salesforce/eventlogfile/csv-rows.ts";
import { ElfFileShaper } from "../../src/sources/eventlogfile/shape.ts";
import { EntryShaper } from "../../src/sources/shaping/entry.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { tempDir } from "../support/tmp.ts";

const BASE = {
  salesforce: { auth_mode: "client_credentials", client_id: "x", client_secret: "y" },
  sink: { loki: { url: "http://127.0.0.1:9/loki/api/v1/push" } },
};

const refused = (tree: Record<string, unknown>, what: RegExp): void => {
  assert.throws(
    () => validateConfig(tree),
    (err: unknown) => err instanceof ConfigError && what.test(err.message),
  );
};

describe("differences from the Python version (docs/migrating-from-python.md)", () => {
  it("stricter validation: batch and page sizes of 0 are refused", () => {
    refused({ ...BASE, sink: { loki: { ...BASE.sink.loki, batch: { max_entries: 0 } } } }, /max_entries/);
    refused({ ...BASE, sink: { loki: { ...BASE.sink.loki, batch: { max_bytes: 0 } } } }, /max_bytes/);
    refused({ ...BASE, sources: { eventlogfile: { page_size: 0 } } }, /page_size/);
  });

  it("transform_salt_file is read only when a hash rule exists", () => {
    const missing = join(tempDir(), "no-such-salt");
    validateConfig({ ...BASE, sources: { transform_salt_file: missing } });
    refused(
      {
        ...BASE,
        sources: {
          transform_salt_file: missing,
          apexlog: { enabled: true, transforms: [{ action: "hash", fields: ["Id"] }] },
        },
      },
      /no-such-salt/,
    );
  });

  it("EventLogFile: a UTF-8 BOM before the header is stripped", async () => {
    const body = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('"EVENT_TYPE","ID"\n"Login","1"\n'),
    ]);
    const batches = [];
    for await (const b of csvRowBatches(Readable.from([body]), "test")) batches.push(b);
    assert.deepEqual(batches[0]!.header, ["EVENT_TYPE", "ID"]);
  });

  it('EventLogFile: a promoted label whose cell is empty is left out (Python sent COL="")', () => {
    const shaper = new ElfFileShaper(["EVENT_TYPE", "USER_TYPE", "TIMESTAMP_DERIVED"], {
      type: { name: "Login", structured_metadata_fields: null, labels: ["USER_TYPE"], sample: 1 },
      fields: [],
      timestampColumn: "TIMESTAMP_DERIVED",
      transforms: NO_TRANSFORMS,
      shaper: new EntryShaper("eventlogfile", new ManualClock()),
    });
    const token = { key: "eventlogfile:Login", value: "{}" };
    const empty = shaper.entry(["Login", "", "2024-05-01T12:34:56.789Z"], undefined, token);
    assert.deepEqual(empty?.labels, { source: "eventlogfile", event_type: "Login" });
    const full = shaper.entry(["Login", "Standard", "2024-05-01T12:34:56.789Z"], undefined, token);
    assert.deepEqual(full?.labels, { USER_TYPE: "Standard", source: "eventlogfile", event_type: "Login" });
  });
});
