// Go-style duration shorthand (`500ms`, `1h30m`, `2w`), with ISO-8601, `HH:MM:SS` and plain seconds as
// fallbacks, exactly the grammar the Python sf2loki accepted (spec C §4.5). Values are milliseconds.

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};
const SHORTHAND = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+$/;
const TOKEN = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g;
const ISO =
  /^P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;
const CLOCK = /^(\d+):([0-5]?\d):([0-5]?\d(?:\.\d+)?)$/;
const NUMBER = /^-?\d+(?:\.\d+)?$/;

/** Milliseconds, or undefined when the text is not a duration. */
export function parseDuration(input: string | number): number | undefined {
  if (typeof input === "number") return Number.isFinite(input) ? input * 1000 : undefined;
  const text = input.trim();
  if (text === "") return undefined;
  if (SHORTHAND.test(text)) {
    let ms = 0;
    for (const [, n, unit] of text.matchAll(TOKEN)) ms += Number(n) * UNIT_MS[unit!]!;
    return ms;
  }
  if (NUMBER.test(text)) return Number(text) * 1000;
  const clock = CLOCK.exec(text);
  if (clock) return (Number(clock[1]) * 3600 + Number(clock[2]) * 60 + Number(clock[3])) * 1000;
  const iso = ISO.exec(text);
  if (iso && text !== "P" && !text.endsWith("T")) {
    const [, w, d, h, m, s] = iso.map((x: string | undefined) => (x === undefined ? 0 : Number(x)));
    return ((w! * 7 + d!) * 86_400 + h! * 3600 + m! * 60 + s!) * 1000;
  }
  return undefined;
}

/** The coarsest exact Go unit: 86400000 → `1d`, 90000 → `90s`, 0 → `0s`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  for (const unit of ["w", "d", "h", "m", "s", "ms"]) {
    const size = UNIT_MS[unit]!;
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
