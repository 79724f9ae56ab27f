// A small SOQL parser and evaluator: the query shapes the polling sources issue, over in-memory
// records. SELECT fields | FIELDS(ALL) FROM X [WHERE ...] [GROUP BY f] [ORDER BY f [ASC|DESC], ...]
// [LIMIT n]; WHERE combines comparisons and IN lists on dates, Ids, strings and numbers with
// AND / OR / NOT and parentheses. Anything else is a MALFORMED_QUERY, as Salesforce would say.
import { parseSfTimestampNs } from "../../salesforce/soql-datetime.ts";

export class SoqlSyntaxError extends Error {}

export type Literal =
  | { kind: "string"; value: string }
  | { kind: "datetime"; ns: bigint }
  | { kind: "number"; value: number }
  | { kind: "null" }
  | { kind: "boolean"; value: boolean };

export type Condition =
  | { op: "and" | "or"; left: Condition; right: Condition }
  | { op: "not"; inner: Condition }
  | { op: "cmp"; field: string; cmp: "=" | "!=" | "<" | "<=" | ">" | ">="; value: Literal }
  | { op: "in"; field: string; negated: boolean; values: Literal[] };

export interface Query {
  fields: string[] | "ALL";
  from: string;
  where: Condition | undefined;
  groupBy: string | undefined;
  orderBy: { field: string; desc: boolean }[];
  limit: number | undefined;
}

const TOKEN =
  /\s*(?:(\d{4}-\d{2}-\d{2}T[0-9:.]+(?:Z|[+-]\d{2}:?\d{2}))|('(?:[^'\\]|\\.)*')|(-?\d+(?:\.\d+)?)|([A-Za-z_][A-Za-z0-9_.]*)|(<=|>=|!=|<>|[=<>(),]))/y;

interface Token {
  kind: "datetime" | "string" | "number" | "word" | "punct";
  text: string;
}

function tokenize(soql: string): Token[] {
  const out: Token[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < soql.length) {
    if (/^\s*$/.test(soql.slice(TOKEN.lastIndex))) break;
    const at = TOKEN.lastIndex;
    const m = TOKEN.exec(soql);
    if (!m) throw new SoqlSyntaxError(`unexpected character at ${at}: ${soql.slice(at, at + 20)}`);
    if (m[1] !== undefined) out.push({ kind: "datetime", text: m[1] });
    else if (m[2] !== undefined) out.push({ kind: "string", text: m[2] });
    else if (m[3] !== undefined) out.push({ kind: "number", text: m[3] });
    else if (m[4] !== undefined) out.push({ kind: "word", text: m[4] });
    else out.push({ kind: "punct", text: m[5]! });
  }
  return out;
}

const UNESCAPE: Record<string, string> = { n: "\n", r: "\r", t: "\t", b: "\b", f: "\f" };

class Parser {
  #t: Token[];
  #i = 0;
  constructor(tokens: Token[]) {
    this.#t = tokens;
  }

  peekWord(...words: string[]): boolean {
    const t = this.#t[this.#i];
    return t?.kind === "word" && words.includes(t.text.toUpperCase());
  }

  peekPunct(p: string): boolean {
    const t = this.#t[this.#i];
    return t?.kind === "punct" && t.text === p;
  }

  next(): Token {
    const t = this.#t[this.#i++];
    if (!t) throw new SoqlSyntaxError("unexpected end of query");
    return t;
  }

  expectWord(word: string): void {
    const t = this.next();
    if (t.kind !== "word" || t.text.toUpperCase() !== word)
      throw new SoqlSyntaxError(`expected ${word}, got ${t.text}`);
  }

  expectPunct(p: string): void {
    const t = this.next();
    if (t.kind !== "punct" || t.text !== p) throw new SoqlSyntaxError(`expected ${p}, got ${t.text}`);
  }

  ident(): string {
    const t = this.next();
    if (t.kind !== "word") throw new SoqlSyntaxError(`expected a name, got ${t.text}`);
    return t.text;
  }

  done(): boolean {
    return this.#i >= this.#t.length;
  }

  query(): Query {
    this.expectWord("SELECT");
    let fields: string[] | "ALL";
    if (this.peekWord("FIELDS")) {
      this.next();
      this.expectPunct("(");
      this.expectWord("ALL");
      this.expectPunct(")");
      fields = "ALL";
    } else {
      fields = [this.ident()];
      while (this.peekPunct(",")) {
        this.next();
        fields.push(this.ident());
      }
    }
    this.expectWord("FROM");
    const from = this.ident();
    let where: Condition | undefined;
    if (this.peekWord("WHERE")) {
      this.next();
      where = this.or();
    }
    let groupBy: string | undefined;
    if (this.peekWord("GROUP")) {
      this.next();
      this.expectWord("BY");
      groupBy = this.ident();
    }
    const orderBy: Query["orderBy"] = [];
    if (this.peekWord("ORDER")) {
      this.next();
      this.expectWord("BY");
      for (;;) {
        const field = this.ident();
        let desc = false;
        if (this.peekWord("ASC", "DESC")) desc = this.next().text.toUpperCase() === "DESC";
        orderBy.push({ field, desc });
        if (!this.peekPunct(",")) break;
        this.next();
      }
    }
    let limit: number | undefined;
    if (this.peekWord("LIMIT")) {
      this.next();
      const t = this.next();
      if (t.kind !== "number") throw new SoqlSyntaxError("LIMIT needs a number");
      limit = Number(t.text);
    }
    if (!this.done()) throw new SoqlSyntaxError(`unexpected ${this.next().text}`);
    return { fields, from, where, groupBy, orderBy, limit };
  }

  or(): Condition {
    let left = this.and();
    while (this.peekWord("OR")) {
      this.next();
      left = { op: "or", left, right: this.and() };
    }
    return left;
  }

  and(): Condition {
    let left = this.unary();
    while (this.peekWord("AND")) {
      this.next();
      left = { op: "and", left, right: this.unary() };
    }
    return left;
  }

  unary(): Condition {
    if (this.peekWord("NOT")) {
      this.next();
      return { op: "not", inner: this.unary() };
    }
    if (this.peekPunct("(")) {
      this.next();
      const inner = this.or();
      this.expectPunct(")");
      return inner;
    }
    const field = this.ident();
    let negated = false;
    if (this.peekWord("NOT")) {
      this.next();
      negated = true;
      if (!this.peekWord("IN")) throw new SoqlSyntaxError("NOT must be followed by IN here");
    }
    if (this.peekWord("IN")) {
      this.next();
      this.expectPunct("(");
      const values = [this.literal()];
      while (this.peekPunct(",")) {
        this.next();
        values.push(this.literal());
      }
      this.expectPunct(")");
      return { op: "in", field, negated, values };
    }
    const t = this.next();
    if (t.kind !== "punct" || !["=", "!=", "<>", "<", "<=", ">", ">="].includes(t.text)) {
      throw new SoqlSyntaxError(`expected a comparison after ${field}, got ${t.text}`);
    }
    const cmp = (t.text === "<>" ? "!=" : t.text) as "=" | "!=" | "<" | "<=" | ">" | ">=";
    return { op: "cmp", field, cmp, value: this.literal() };
  }

  literal(): Literal {
    const t = this.next();
    switch (t.kind) {
      case "string":
        return {
          kind: "string",
          value: t.text.slice(1, -1).replace(/\\(.)/g, (_, c: string) => UNESCAPE[c] ?? c),
        };
      case "datetime": {
        const ns = parseSfTimestampNs(t.text);
        if (ns === undefined) throw new SoqlSyntaxError(`bad datetime literal ${t.text}`);
        return { kind: "datetime", ns };
      }
      case "number":
        return { kind: "number", value: Number(t.text) };
      case "word": {
        const w = t.text.toUpperCase();
        if (w === "NULL") return { kind: "null" };
        if (w === "TRUE" || w === "FALSE") return { kind: "boolean", value: w === "TRUE" };
        break;
      }
      case "punct":
        break;
    }
    throw new SoqlSyntaxError(`expected a value, got ${t.text}`);
  }
}

export function parseSoql(soql: string): Query {
  return new Parser(tokenize(soql)).query();
}

/** A record's value at a dotted path (`LogUser.Username`). */
export function fieldOf(record: Record<string, unknown>, path: string): unknown {
  let v: unknown = record;
  for (const part of path.split(".")) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** -1/0/1, or undefined when the two cannot be compared (null on either side). */
function compare(value: unknown, lit: Literal): number | undefined {
  if (value === null || value === undefined || lit.kind === "null") return undefined;
  switch (lit.kind) {
    case "datetime": {
      const ns = typeof value === "string" ? parseSfTimestampNs(value) : undefined;
      if (ns === undefined) return undefined;
      return ns < lit.ns ? -1 : ns > lit.ns ? 1 : 0;
    }
    case "number":
      return Math.sign(Number(value) - lit.value);
    case "boolean":
      return value === lit.value ? 0 : 1;
    case "string": {
      const s = typeof value === "string" ? value : JSON.stringify(value);
      return s < lit.value ? -1 : s > lit.value ? 1 : 0;
    }
  }
}

export function matches(record: Record<string, unknown>, cond: Condition): boolean {
  switch (cond.op) {
    case "and":
      return matches(record, cond.left) && matches(record, cond.right);
    case "or":
      return matches(record, cond.left) || matches(record, cond.right);
    case "not":
      return !matches(record, cond.inner);
    case "in": {
      const v = fieldOf(record, cond.field);
      const found = cond.values.some((lit) => (lit.kind === "null" ? v == null : compare(v, lit) === 0));
      return cond.negated ? !found : found;
    }
    case "cmp": {
      const v = fieldOf(record, cond.field);
      if (cond.value.kind === "null")
        return cond.cmp === "=" ? v == null : cond.cmp === "!=" ? v != null : false;
      const c = compare(v, cond.value);
      if (c === undefined) return cond.cmp === "!=";
      switch (cond.cmp) {
        case "=":
          return c === 0;
        case "!=":
          return c !== 0;
        case "<":
          return c < 0;
        case "<=":
          return c <= 0;
        case ">":
          return c > 0;
        case ">=":
          return c >= 0;
      }
    }
  }
}

/** Sort key of a value: timestamps by instant, numbers by value, the rest as strings. */
function sortKey(v: unknown): bigint | number | string | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === "number") return v;
  if (typeof v === "string") return parseSfTimestampNs(v) ?? v;
  return JSON.stringify(v);
}

/** Salesforce's ORDER BY: nulls first ascending, last descending. */
export function orderRecords<T extends Record<string, unknown>>(
  records: T[],
  orderBy: Query["orderBy"],
): T[] {
  if (orderBy.length === 0) return records;
  const keyed = records.map((r) => ({ r, keys: orderBy.map((o) => sortKey(fieldOf(r, o.field))) }));
  keyed.sort((a, b) => {
    for (let i = 0; i < orderBy.length; i++) {
      const x = a.keys[i];
      const y = b.keys[i];
      const desc = orderBy[i]!.desc;
      if (x === y) continue;
      if (x === undefined) return desc ? 1 : -1;
      if (y === undefined) return desc ? -1 : 1;
      const c = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : String(x) < String(y) ? -1 : 1;
      if (c !== 0) return desc ? -c : c;
    }
    return 0;
  });
  return keyed.map((k) => k.r);
}
