// The `user:password@` of a URL is a secret wherever the URL is echoed: an error naming a proxy or a
// Loki, a start-up banner, a log line. Redaction must not depend on the value parsing: the values that
// most need it are the malformed ones an operator is being told about (`user:s3cret@proxy:31x8` with no
// scheme, `http://user:pa/ss@proxy:3128` with a `/` in the password, which WHATWG URL reads as the
// host `user` and then fails on). So the rule works on the text: everything between the scheme (or
// the start) and the last `@` of the authority-and-beyond is userinfo, `/` and `@` included. That
// over-redacts a URL whose path holds an `@`, which costs a log line some detail and never a secret.

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * One URL-like value, parsed or not, with its userinfo replaced by `***`: `http://***@proxy:3128`,
 * `***@proxy:3128`. A value without `@` is returned as given.
 */
export function withoutUserinfo(value: string): string {
  const at = value.lastIndexOf("@");
  if (at < 0) return value;
  const scheme = SCHEME.exec(value)?.[0] ?? "";
  return `${scheme}***${value.slice(at)}`;
}

/** Any `scheme://userinfo@` inside free text (an error message, a log line), userinfo up to the last `@` before a space or quote. */
const IN_TEXT = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s"'<>@]*(?:@[^\s"'<>@]*)*@/gi;

/** `text` with the userinfo of every scheme-qualified URL in it replaced by `***`. */
export function withoutUserinfoIn(text: string): string {
  return text.includes("@") ? text.replace(IN_TEXT, "$1***@") : text;
}
