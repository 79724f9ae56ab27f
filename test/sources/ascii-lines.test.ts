// The EventLogFile shaper marks its joined lines ASCII so LogEntry takes the UTF-8 length from the
// string length without a scan; the other shapers' lines are measured. An undercount would let a line
// past the byte cap: every line must be ASCII and counted exactly, whatever the payload holds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { compileTransforms } from "../../src/egress/transforms.ts";
import type { LogEntry } from "../../src/model.ts";
import { ElfFileShaper } from "../../src/sources/eventlogfile/shape.ts";
import type { EventLogFileTypeSettings } from "../../src/sources/eventlogfile/settings.ts";
import { EntryShaper } from "../../src/sources/shaping/entry.ts";
import { ManualClock } from "../../src/util/clock.ts";

const AWKWARD = [
  "Zürich",
  "東京",
  "emoji 😀 here",
  "lone \ud800 surrogate",
  'quote " and \\',
  "nul \u0000 tab \t",
  "\u007f\u0080",
];
const TOKEN = { key: "k", value: "v" };

function assertCounted(entry: LogEntry | undefined, what: string): void {
  assert.ok(entry, what);
  assert.equal(entry.lineBytes, Buffer.byteLength(entry.line, "utf8"), `${what}: ${entry.line}`);
  assert.match(entry.line, /^[\x20-\x7e]*$/, `${what} is printable ASCII`);
}

test("EventLogFile lines are ASCII and counted exactly, on the fast path and the general one", () => {
  const shaper = new EntryShaper("eventlogfile", new ManualClock({ auto: true }));
  const type = { name: "API", sample: 1, labels: [] } as unknown as EventLogFileTypeSettings;
  const header = ["TIMESTAMP_DERIVED", "USER_ID", "NOTE", "ÄRGER"];
  const none = compileTransforms([], { source: "eventlogfile" });
  const masking = compileTransforms([{ action: "mask", fields: ["USER_ID"] }], { source: "eventlogfile" });
  for (const [path, transforms] of [
    ["fast", none],
    ["general", masking],
  ] as const) {
    const shape = new ElfFileShaper(header, {
      type,
      fields: ["USER_ID"],
      timestampColumn: "TIMESTAMP_DERIVED",
      transforms,
      shaper,
    });
    for (const cell of AWKWARD) {
      assertCounted(
        shape.entry(["2026-01-01T00:00:00.000Z", cell, cell, cell], undefined, TOKEN),
        `${path} ${cell}`,
      );
    }
    assertCounted(
      shape.entry(["2026-01-01T00:00:00.000Z", "u", "n", "ä", "extra 😀"], undefined, TOKEN),
      `${path} wide row`,
    );
  }
});

test("polled-object lines (canonical JSON of the record) are ASCII and counted exactly", () => {
  const shaper = new EntryShaper("eventlog_objects", new ManualClock({ auto: true }));
  for (const value of AWKWARD) {
    const entry = shaper.entry({
      payload: { [value]: value, nested: { list: [value, 1.5, null, true] } },
      labels: {},
      metadataFields: [],
      timestampFields: [],
      fallbackNs: undefined,
      checkpoint: TOKEN,
    });
    assertCounted(entry, value);
  }
});

test("a line a source gives as is (ApexLog's body) is measured, not assumed ASCII", () => {
  const shaper = new EntryShaper("apexlog", new ManualClock({ auto: true }));
  const line = "USER_DEBUG|Zürich 😀";
  const entry = shaper.entry({
    payload: {},
    labels: {},
    metadataFields: [],
    timestampFields: [],
    fallbackNs: undefined,
    checkpoint: TOKEN,
    line,
  });
  assert.equal(entry.lineBytes, Buffer.byteLength(line, "utf8"));
  assert.notEqual(entry.lineBytes, line.length);
});
