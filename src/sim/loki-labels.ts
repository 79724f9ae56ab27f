// Parses a Loki stream selector `{k="v",...}` the way Loki's push path does (PromQL label syntax,
// `=` only), independently of the sink's renderer so the receiver can catch its mistakes.

export const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export class LabelSyntaxError extends Error {}

const SIMPLE_ESCAPES: Record<string, string> = {
  "\\": "\\",
  '"': '"',
  "'": "'",
  n: "\n",
  t: "\t",
  r: "\r",
  a: "\x07",
  b: "\b",
  f: "\f",
  v: "\v",
};

/** Go-style double-quoted string starting at `text[start] === '"'`; returns value and next index. */
function readQuoted(text: string, start: number): [string, number] {
  let out = "";
  let i = start + 1;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') return [out, i + 1];
    if (c === "\n") throw new LabelSyntaxError("newline inside a quoted label value");
    if (c !== "\\") {
      out += c;
      i++;
      continue;
    }
    const e = text[i + 1];
    if (e === undefined) break;
    const simple = SIMPLE_ESCAPES[e];
    if (simple !== undefined) {
      out += simple;
      i += 2;
      continue;
    }
    const width = e === "x" ? 2 : e === "u" ? 4 : e === "U" ? 8 : 0;
    const hex = text.slice(i + 2, i + 2 + width);
    if (width === 0 || !/^[0-9a-fA-F]+$/.test(hex) || hex.length !== width) {
      throw new LabelSyntaxError(`invalid escape \\${e} in label value`);
    }
    out += String.fromCodePoint(parseInt(hex, 16));
    i += 2 + width;
  }
  throw new LabelSyntaxError("unterminated quoted label value");
}

/** `{a="b", c="d"}` → `{a: "b", c: "d"}`; throws LabelSyntaxError with Loki-like wording. */
export function parseLabelSelector(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  const skipSpace = (): void => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  skipSpace();
  if (text[i] !== "{") throw new LabelSyntaxError(`parse error: expected "{" in ${JSON.stringify(text)}`);
  i++;
  for (;;) {
    skipSpace();
    if (text[i] === "}") {
      i++;
      break;
    }
    const nameStart = i;
    while (i < text.length && /[a-zA-Z0-9_]/.test(text[i]!)) i++;
    const name = text.slice(nameStart, i);
    if (!LABEL_NAME.test(name))
      throw new LabelSyntaxError(`parse error: invalid label name at offset ${nameStart}`);
    skipSpace();
    if (text[i] !== "=" || text[i + 1] === "~") {
      throw new LabelSyntaxError(`parse error: expected "=" after label ${name}`);
    }
    i++;
    skipSpace();
    if (text[i] !== '"') throw new LabelSyntaxError(`parse error: expected a quoted value for label ${name}`);
    const [value, next] = readQuoted(text, i);
    i = next;
    if (Object.hasOwn(labels, name)) throw new LabelSyntaxError(`duplicate label name ${name}`);
    labels[name] = value;
    skipSpace();
    if (text[i] === ",") i++;
    else if (text[i] !== "}")
      throw new LabelSyntaxError(`parse error: expected "," or "}" after label ${name}`);
  }
  skipSpace();
  if (i !== text.length) throw new LabelSyntaxError("parse error: trailing characters after the selector");
  return labels;
}

/** Problems with a label map that Loki would refuse, or undefined when it is acceptable. */
export function labelSetProblem(labels: Record<string, string>): string | undefined {
  const names = Object.keys(labels);
  if (names.length === 0) return "error at least one label pair is required per stream";
  const bad = names.filter((n) => !LABEL_NAME.test(n));
  if (bad.length > 0) return `invalid label name(s) ${bad.join(", ")}`;
  return undefined;
}

/** Canonical, order-independent key for a label map (the receiver's own, not the sink's renderer). */
export function canonicalLabels(labels: Record<string, string>): string {
  return JSON.stringify(
    Object.keys(labels)
      .sort()
      .map((k) => [k, labels[k]]),
  );
}
