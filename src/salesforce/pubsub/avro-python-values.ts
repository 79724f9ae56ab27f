// How the Python sf2loki prints Avro values that JSON has no type for. fastavro converts logical
// types to Python objects and `json.dumps(..., default=str)` / `str()` print those; producing the
// same text at decode time makes the line, structured metadata and hashes equal without any
// special case downstream. Each function returns undefined where Python's conversion would fail,
// so the caller keeps the raw value instead.

const PRINTABLE_LOW = 0x20;
const PRINTABLE_HIGH = 0x7e;

/** Python `repr(bytes)`: `b'\x00A'`, double-quoted only when the bytes hold `'` and no `"`. */
export function pyBytesRepr(buf: Uint8Array): string {
  const quote = buf.includes(0x27) && !buf.includes(0x22) ? 0x22 : 0x27;
  let out = "b" + String.fromCharCode(quote);
  for (const b of buf) {
    if (b === 0x5c) out += "\\\\";
    else if (b === quote) out += "\\" + String.fromCharCode(quote);
    else if (b === 0x09) out += "\\t";
    else if (b === 0x0a) out += "\\n";
    else if (b === 0x0d) out += "\\r";
    else if (b < PRINTABLE_LOW || b > PRINTABLE_HIGH) out += "\\x" + b.toString(16).padStart(2, "0");
    else out += String.fromCharCode(b);
  }
  return out + String.fromCharCode(quote);
}

/** Python `str(Decimal)` of a two's-complement big-endian unscaled value and its scale. */
export function pyDecimalStr(buf: Uint8Array, scale: number): string {
  let unscaled = 0n;
  for (const b of buf) unscaled = (unscaled << 8n) | BigInt(b);
  if (buf.length > 0 && (buf[0]! & 0x80) !== 0) unscaled -= 1n << BigInt(buf.length * 8);
  const sign = unscaled < 0n ? "-" : "";
  const digits = (unscaled < 0n ? -unscaled : unscaled).toString();
  const exp = -scale;
  const adjusted = digits.length - 1 + exp;
  // Decimal's to-sci-string rule: positional when the exponent is <= 0 and adjusted >= -6.
  if (exp <= 0 && adjusted >= -6) {
    if (exp === 0) return sign + digits;
    const point = digits.length + exp;
    return point > 0
      ? `${sign}${digits.slice(0, point)}.${digits.slice(point)}`
      : `${sign}0.${"0".repeat(-point)}${digits}`;
  }
  const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${mantissa}E${adjusted >= 0 ? "+" : ""}${adjusted}`;
}

const MIN_MS = Date.UTC(1, 0, 1);
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const DAY_US = 86_400_000_000;
const TWO = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, "0"));
// Events of one stream mostly share a day: its `YYYY-MM-DD ` is formatted once, not per event.
let cachedDay = Number.NaN;
let cachedDate = "";

/** `YYYY-MM-DD HH:MM:SS[.ffffff]`: Python `str(datetime)` without the offset. */
function pyDateTime(micros: number): string | undefined {
  const ms = Math.floor(micros / 1000);
  if (!Number.isSafeInteger(micros) || ms < MIN_MS || ms > MAX_MS) return undefined;
  const day = Math.floor(micros / DAY_US);
  if (day !== cachedDay) {
    cachedDay = day;
    cachedDate = new Date(day * 86_400_000).toISOString().slice(0, 10);
  }
  let rest = micros - day * DAY_US;
  const h = Math.floor(rest / 3_600_000_000);
  rest -= h * 3_600_000_000;
  const m = Math.floor(rest / 60_000_000);
  rest -= m * 60_000_000;
  const s = Math.floor(rest / 1_000_000);
  const frac = rest - s * 1_000_000;
  const base = `${cachedDate} ${TWO[h]!}:${TWO[m]!}:${TWO[s]!}`;
  return frac === 0 ? base : `${base}.${String(frac).padStart(6, "0")}`;
}

/** `timestamp-millis` / `-micros`: an aware UTC datetime (`... 12:34:56.789000+00:00`). */
export function pyTimestamp(micros: number, local: boolean): string | undefined {
  const text = pyDateTime(micros);
  return text === undefined || local ? text : `${text}+00:00`;
}

/** `date`: days since the epoch as `YYYY-MM-DD`. */
export function pyDate(days: number): string | undefined {
  const text = pyDateTime(days * 86_400_000_000);
  return text?.slice(0, 10);
}

/** `time-millis` / `time-micros`: `HH:MM:SS[.ffffff]`; Python refuses a day or more. */
export function pyTime(micros: number): string | undefined {
  if (!Number.isSafeInteger(micros) || micros < 0 || micros >= 86_400_000_000) return undefined;
  return pyDateTime(micros)?.slice(11);
}

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/** `uuid`: `str(uuid.UUID(s))`, lower case and hyphenated. */
export function pyUuid(s: string): string | undefined {
  const braced = s.startsWith("{") && s.endsWith("}") ? s.slice(1, -1) : s;
  if (!UUID.test(braced)) return undefined;
  const hex = braced.replaceAll("-", "").toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
