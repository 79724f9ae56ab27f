// Runs one SOQL text against the simulated org's data, with the restrictions Salesforce enforces on
// the shapes the sources use: FIELDS(ALL) needs LIMIT <= 200, Big Objects accept only a single
// descending ORDER BY.
import { apexLogRecord, eventLogFileRecord, type SimData } from "./data.ts";
import { fieldOf, matches, orderRecords, parseSoql, SoqlSyntaxError, type Query } from "./soql.ts";

export class SimQueryError extends Error {
  readonly errorCode: string;
  constructor(errorCode: string, message: string) {
    super(message);
    this.errorCode = errorCode;
  }
}

interface Row {
  fields: Record<string, unknown>;
  visibleAtMs: number | undefined;
}

function rowsOf(from: string, data: SimData): Row[] {
  if (from === "EventLogFile") {
    return data.eventLogFiles.map((f) => ({ fields: eventLogFileRecord(f), visibleAtMs: f.$visibleAtMs }));
  }
  if (from === "TraceFlag") {
    return data.traceFlags.map((r) => ({ fields: r, visibleAtMs: undefined }));
  }
  if (from === "ManagedEventSubscription") {
    return (data.managedEventSubscriptions ?? []).map((r) => ({ fields: r, visibleAtMs: undefined }));
  }
  if (from === "User") {
    return (data.users ?? []).map((r) => ({ fields: r, visibleAtMs: undefined }));
  }
  if (from === "ApexLog") {
    return data.apexLogs.map((l) => ({ fields: apexLogRecord(l), visibleAtMs: l.$visibleAtMs }));
  }
  const records = data.objects[from];
  if (!records) {
    throw new SimQueryError("INVALID_TYPE", `sObject type '${from}' is not supported.`);
  }
  return records.map((r) => {
    const fields: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(r)) if (!k.startsWith("$")) fields[k] = v;
    return { fields, visibleAtMs: r.$visibleAtMs };
  });
}

function checkShape(q: Query, data: SimData): void {
  if (q.fields === "ALL" && (q.limit === undefined || q.limit > 200)) {
    throw new SimQueryError("MALFORMED_QUERY", "The SOQL FIELDS function must have a LIMIT of at most 200");
  }
  if (data.bigObjects.has(q.from)) {
    if (q.orderBy.length > 1 || q.orderBy.some((o) => !o.desc)) {
      throw new SimQueryError(
        "BIG_OBJECT_UNSUPPORTED_OPERATION",
        "Big Objects support only a single ORDER BY in descending order",
      );
    }
  }
}

function project(q: Query, fields: Record<string, unknown>, type: string): Record<string, unknown> {
  const attributes = {
    type,
    url: `/services/data/v60.0/sobjects/${type}/${typeof fields.Id === "string" ? fields.Id : ""}`,
  };
  if (q.fields === "ALL") return { attributes, ...fields };
  const out: Record<string, unknown> = { attributes };
  for (const f of q.fields) {
    const dot = f.indexOf(".");
    if (dot < 0) {
      out[f] = fieldOf(fields, f) ?? null;
      continue;
    }
    // `Profile.Name` comes back nested, as Salesforce sends it: {"Profile": {"attributes": …, "Name": …}},
    // or "Profile": null when the record has none.
    const relation = f.slice(0, dot);
    const related = fields[relation];
    if (related === null || typeof related !== "object") {
      out[relation] = null;
      continue;
    }
    const nested = (out[relation] ??= { attributes: { type: relation } }) as Record<string, unknown>;
    nested[f.slice(dot + 1)] = fieldOf(related as Record<string, unknown>, f.slice(dot + 1)) ?? null;
  }
  return out;
}

export function runQuery(
  soql: string,
  data: SimData,
  nowMs: number,
  _tooling: boolean,
): Record<string, unknown>[] {
  let q: Query;
  try {
    q = parseSoql(soql);
  } catch (err) {
    if (err instanceof SoqlSyntaxError) throw new SimQueryError("MALFORMED_QUERY", err.message);
    throw err;
  }
  checkShape(q, data);
  let rows = rowsOf(q.from, data).filter(
    (r) =>
      (r.visibleAtMs === undefined || r.visibleAtMs <= nowMs) && (!q.where || matches(r.fields, q.where)),
  );
  if (q.groupBy !== undefined) {
    const field = q.groupBy;
    const seen = new Set<unknown>();
    rows = rows.filter((r) => {
      const v = fieldOf(r.fields, field);
      if (seen.has(v)) return false;
      seen.add(v);
      return true;
    });
    return rows.map((r) => ({ attributes: { type: "AggregateResult" }, [field]: fieldOf(r.fields, field) }));
  }
  const ordered = orderRecords(
    rows.map((r) => r.fields),
    q.orderBy,
  );
  const limited = q.limit === undefined ? ordered : ordered.slice(0, q.limit);
  return limited.map((f) => project(q, f, q.from));
}
