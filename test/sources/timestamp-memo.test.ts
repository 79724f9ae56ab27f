import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TimestampMemo } from "../../src/sources/shaping/timestamp-memo.ts";
import { timestampOf } from "../../src/sources/shaping/timestamp.ts";
import { seededRandom } from "../../src/util/prng.ts";

const pad = (n: number, w: number): string => String(n).padStart(w, "0");

describe("TimestampMemo", () => {
  it("agrees with timestampOf on every row of a time-ordered file, both columns", () => {
    const memoIso = new TimestampMemo();
    const memoCompact = new TimestampMemo();
    let ms = Date.UTC(2026, 11, 31, 23, 59, 58); // across a second, a day and a year boundary
    let memoHits = 0;
    for (let i = 0; i < 5000; i++) {
      ms += i % 7;
      const d = new Date(ms);
      const iso = d.toISOString();
      const compact =
        `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1, 2)}${pad(d.getUTCDate(), 2)}` +
        `${pad(d.getUTCHours(), 2)}${pad(d.getUTCMinutes(), 2)}${pad(d.getUTCSeconds(), 2)}.${pad(d.getUTCMilliseconds(), 3)}`;
      const want = BigInt(ms) * 1_000_000n;
      assert.equal(timestampOf(iso), want, iso);
      assert.equal(memoIso.parse(iso), want, iso);
      assert.equal(memoCompact.parse(compact), want, compact);
      if (i > 0 && ms % 1000 >= 7) memoHits++;
    }
    assert.ok(memoHits > 4000, "most rows share their second with the row before");
  });

  it("agrees with timestampOf on near misses, other forms and garbage, whatever came before", () => {
    const near = [
      "2026-12-01T15:55:00.123Z",
      "2026-12-01T15:55:00.12Z",
      "2026-12-01T15:55:00,123Z",
      "2026-12-01T15:55:00.1a3Z",
      "2026-12-01T15:55:00.123+",
      "2026-12-01 15:55:00.123Z",
      "2026-02-31T15:55:00.123Z",
      "2026-12-01T24:55:00.123Z",
      " 2026-12-01T15:55:00.123Z",
      "2026-12-01T15:55:00.123Z ",
      "2026-12-01T15:55:00.123456Z",
      "2026-12-01T15:55:00+01:00",
      "2026-12-01",
      "20261201155500.123",
      "20261201155500.12x",
      "20261201155500,123",
      "20261301155500.123",
      "20261201155500",
      "20261201155500.123456",
      "1969-12-31T23:59:59.999Z",
      "19691231235959.001",
      "",
      "not a time at all!!!!!!!",
    ];
    const random = seededRandom(42);
    const memo = new TimestampMemo();
    for (let i = 0; i < 20_000; i++) {
      const base = near[Math.floor(random() * near.length)]!;
      // Mutate one character now and then, so the memo sees prefixes that almost match.
      let text = base;
      if (random() < 0.5 && base.length > 0) {
        const at = Math.floor(random() * base.length);
        text = base.slice(0, at) + "0123456789.:TZ-x "[Math.floor(random() * 17)]! + base.slice(at + 1);
      }
      assert.equal(memo.parse(text), timestampOf(text), JSON.stringify(text));
    }
    assert.equal(memo.parse(undefined), undefined);
  });
});
