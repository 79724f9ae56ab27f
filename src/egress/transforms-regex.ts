// The Python regex dialect of `regex_replace`, translated to a JS RegExp and replacement once at
// compile time.

/** Python `re` syntax to JS: named groups `(?P<n>..)`, backreference `(?P=n)`, `\A`, `\Z`. */
export function pythonPatternToJs(pattern: string): RegExp {
  const js = pattern
    .replace(/\(\?P<([A-Za-z_][A-Za-z0-9_]*)>/g, "(?<$1>")
    .replace(/\(\?P=([A-Za-z_][A-Za-z0-9_]*)\)/g, "\\k<$1>")
    .replace(/\\A/g, "^")
    .replace(/\\Z/g, "$");
  return new RegExp(js, "gu");
}

/** Python replacement syntax to JS: `\1`, `\g<1>`, `\g<name>`, `\\`; a literal `$` stays literal. */
export function pythonReplacementToJs(replacement: string): string {
  let out = "";
  for (let i = 0; i < replacement.length; i++) {
    const c = replacement[i]!;
    if (c === "$") {
      out += "$$";
      continue;
    }
    if (c !== "\\" || i + 1 >= replacement.length) {
      out += c;
      continue;
    }
    const rest = replacement.slice(i + 1);
    const num = /^\d{1,2}/.exec(rest);
    const named = /^g<([A-Za-z_][A-Za-z0-9_]*|\d+)>/.exec(rest);
    if (num) {
      out += `$${num[0]}`;
      i += num[0].length;
    } else if (named) {
      out += /^\d+$/.test(named[1]!) ? `$${named[1]}` : `$<${named[1]}>`;
      i += named[0].length;
    } else {
      const esc = rest[0]!;
      out += esc === "n" ? "\n" : esc === "t" ? "\t" : esc === "r" ? "\r" : esc === "\\" ? "\\" : `\\${esc}`;
      i += 1;
    }
  }
  return out;
}
