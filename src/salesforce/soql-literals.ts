// Every value interpolated into SOQL goes through one of these (#150): identifiers are validated,
// string literals are escaped, Ids from a checkpoint are checked before they become a cursor.
import { Sf2LokiError } from "../errors.ts";

const IDENTIFIER = /^[A-Za-z0-9_]+$/;
const SALESFORCE_ID = /^[A-Za-z0-9]{15,18}$/;

export function isSoqlIdentifier(name: string): boolean {
  return IDENTIFIER.test(name);
}

/** An object, field or EventType name; throws on anything else (config validates first). */
export function soqlIdentifier(name: string): string {
  if (!IDENTIFIER.test(name)) {
    throw new Sf2LokiError(
      "SF2LOKI_SOQL_LITERAL",
      `refusing to put ${JSON.stringify(name.slice(0, 80))} into a SOQL query as a name: only letters, digits and _ are allowed; fix the config`,
    );
  }
  return name;
}

const ESCAPES: Record<string, string> = {
  "\\": "\\\\",
  "'": "\\'",
  '"': '\\"',
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\b": "\\b",
  "\f": "\\f",
};

/** A quoted SOQL string literal with every SOQL escape applied. */
export function soqlString(value: string): string {
  return `'${value.replace(/[\\'"\n\r\t\b\f]/g, (c) => ESCAPES[c]!)}'`;
}

/** A 15- or 18-character Salesforce record Id. */
export function isSalesforceId(value: unknown): value is string {
  return typeof value === "string" && SALESFORCE_ID.test(value);
}
