// The simulated org's users: the ones its events, EventLogFile rows and ApexLogs name, as the User
// object holds them (with the Profile and UserRole relationships `enrich.users` reads).
import { recordId18 } from "../../salesforce/record-id.ts";
import { sfDatetime, type SimRecord } from "./data.ts";

const LAST_LOGIN_BASE_MS = Date.UTC(2026, 0, 1);

/** EventLogFile rows name users 0..SIM_USERS-1; events the first eight; ApexLogs dev and ops. */
export const SIM_USERS = 97;
const NAMED = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "dev", "ops"];
export const APEX_USERS = { dev: 8, ops: 9 } as const;
const ROLES = ["CEO", "Sales Rep", "Support Agent"];

/** User i's 15-character id, as EventLogFiles' USER_ID carries it. */
export function simUserId15(i: number): string {
  return `005SIM0000${String(i).padStart(5, "0")}`;
}

/** User i's 18-character id, as events and the User object carry it (Salesforce's case checksum). */
export function simUserId(i: number): string {
  return recordId18(simUserId15(i));
}

export function simUsername(i: number): string {
  return `${NAMED[i] ?? `user${i}`}@example.com`;
}

export function simUser(i: number): SimRecord {
  const first = NAMED[i] ?? `user${i}`;
  return {
    Id: simUserId(i),
    Username: simUsername(i),
    Name: `${first.charAt(0).toUpperCase()}${first.slice(1)} Example`,
    Profile: { Name: i === 0 ? "System Administrator" : i % 3 === 0 ? "Custom: Support" : "Standard User" },
    UserRole: i % 4 === 0 ? null : { Name: ROLES[i % ROLES.length]! },
    IsActive: i % 11 !== 10,
    // The lower the index the more recent the login; every 13th never logged in.
    LastLoginDate: i % 13 === 12 ? null : sfDatetime(LAST_LOGIN_BASE_MS - i * 3_600_000),
  };
}

export function simUsers(): SimRecord[] {
  return Array.from({ length: SIM_USERS }, (_, i) => simUser(i));
}
