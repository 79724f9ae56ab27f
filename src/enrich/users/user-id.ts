// Which user an entry is about, read off its line, and the one spelling the cache keys by.
//
// Read off the line, not the payload: it is what Loki gets, after the egress transforms. A UserId an
// operator hashed or dropped there is no Salesforce id any more, so it is not looked up, and no name
// is attached to an entry whose id was meant to leave pseudonymised.

/**
 * The fields that name an entry's user, as canonical JSON spells their start: Real-Time Event
 * Monitoring events and event objects (`UserId`), EventLogFile rows (`USER_ID`), ApexLogs
 * (`LogUserId`), Change Data Capture's ChangeEventHeader (`commitUser`). First found wins.
 */
const NEEDLES = ['"UserId": "', '"USER_ID": "', '"LogUserId": "', '"commitUser": "'];

/** A User record's key prefix: other 005-less ids in those fields (a 000 system id) are no users. */
const USER_PREFIX = "005";

function isIdChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/** The 18-character id of the user the line names, or undefined when it names none. */
export function userIdOfLine(line: string): string | undefined {
  for (const needle of NEEDLES) {
    const at = line.indexOf(needle);
    if (at < 0) continue;
    const start = at + needle.length;
    let end = start;
    while (end < line.length && end - start < 19 && isIdChar(line.charCodeAt(end))) end++;
    if (line.charCodeAt(end) !== 34 /* " */) return undefined;
    return userId18(line.slice(start, end));
  }
  return undefined;
}

const SUFFIX = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345";

/**
 * The 18-character form of a 15- or 18-character User id, else undefined. EventLogFiles carry the
 * 15-character form, events the 18: one user must be one cache entry, and the 18-character id is
 * what a User query returns. The suffix encodes, per 5-character chunk, which characters are upper case.
 */
export function userId18(id: string): string | undefined {
  if ((id.length !== 15 && id.length !== 18) || !id.startsWith(USER_PREFIX)) return undefined;
  for (let i = 0; i < id.length; i++) if (!isIdChar(id.charCodeAt(i))) return undefined;
  if (id.length === 18) return id;
  let suffix = "";
  for (let chunk = 0; chunk < 3; chunk++) {
    let bits = 0;
    for (let i = 0; i < 5; i++) {
      const c = id.charCodeAt(chunk * 5 + i);
      if (c >= 65 && c <= 90) bits |= 1 << i;
    }
    suffix += SUFFIX.charAt(bits);
  }
  return id + suffix;
}
