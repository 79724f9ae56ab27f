// Python `fnmatchcase` semantics, shared by topic include/exclude, sampling and `state show --key`:
// case-sensitive, `*` matches anything including `/`, `?` one character, `[seq]` and `[!seq]` classes.
const cache = new Map<string, RegExp>();

function translate(pattern: string): string {
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "*") {
      while (pattern[i + 1] === "*") i++;
      out += ".*";
    } else if (c === "?") {
      out += ".";
    } else if (c === "[") {
      let j = i + 1;
      if (pattern[j] === "!") j++;
      if (pattern[j] === "]") j++;
      while (j < pattern.length && pattern[j] !== "]") j++;
      if (j >= pattern.length) {
        out += "\\[";
        continue;
      }
      let body = pattern.slice(i + 1, j).replace(/\\/g, "\\\\");
      if (body.startsWith("!")) body = "^" + body.slice(1);
      else if (body.startsWith("^")) body = "\\" + body;
      out += `[${body}]`;
      i = j;
    } else {
      out += c.replace(/[.+^${}()|\\\]/-]/g, "\\$&");
    }
  }
  return out;
}

export function compileGlob(pattern: string): RegExp {
  let re = cache.get(pattern);
  if (!re) {
    re = new RegExp(`^(?:${translate(pattern)})$`, "s");
    cache.set(pattern, re);
  }
  return re;
}

export function fnmatchcase(name: string, pattern: string): boolean {
  return compileGlob(pattern).test(name);
}
