// Salesforce's two spellings of one record id. EventLogFiles carry the 15-character, case-sensitive
// form, events and API results the 18-character one; the last three characters encode, per
// 5-character chunk, which characters are upper case, so the 18-character form is case-insensitive.

const SUFFIX = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345";

/** The 18-character form of a 15-character id (its characters are not checked here). */
export function recordId18(id15: string): string {
  let suffix = "";
  for (let chunk = 0; chunk < 3; chunk++) {
    let bits = 0;
    for (let i = 0; i < 5; i++) {
      const c = id15.charCodeAt(chunk * 5 + i);
      if (c >= 65 && c <= 90) bits |= 1 << i;
    }
    suffix += SUFFIX.charAt(bits);
  }
  return id15 + suffix;
}
