// The cost of Python number types on SOQL pages (src/salesforce/rest-json.ts): a 200-record
// LoginEvent page parsed by plain JSON.parse vs parsePythonJson, with a whole float in every record
// (the reviver runs) and without (only the pre-scan runs). Prints ms per page and the ratios.
//   node bench/rest-json.ts
import { parsePythonJson } from "../src/salesforce/rest-json.ts";
const rec = (i: number, whole: boolean) =>
  `{"attributes": {"type": "LoginEvent", "url": "/services/data/v60.0/sobjects/LoginEvent/0Yw00000000${String(i).padStart(4, "0")}AAA"}, "Id": "0Yw00000000${String(i).padStart(4, "0")}AAA", "EventDate": "2024-05-01T12:34:56.000+0000", "EventIdentifier": "e-${i}", "Username": "user${i}@example.com", "SourceIp": "203.0.113.7", "Status": "Success", "ApiVersion": ${whole ? "60.0" : "60.5"}, "EvaluationTime": ${whole ? "0.0" : "0.25"}, "LoginLatitude": 37.7749, "LoginLongitude": -122.4194, "RowsProcessed": 12, "CipherSuite": null, "Browser": "Chrome 120", "Platform": "Mac OSX", "LoginUrl": "login.salesforce.com", "CountryIso": "US", "City": "San Francisco", "TlsProtocol": "TLS 1.3", "SessionLevel": "STANDARD"}`;
const page = (whole: boolean) =>
  `{"totalSize": 200, "done": true, "records": [${Array.from({ length: 200 }, (_, i) => rec(i, whole)).join(", ")}]}`;
const withWhole = page(true);
const without = page(false);
const best: Record<string, number> = {};
const N = 200;
for (let r = 0; r < 7; r++) {
  for (const [k, fn] of [
    ["JSON.parse", () => JSON.parse(withWhole) as unknown],
    ["python (a whole float: reviver)", () => parsePythonJson(withWhole)],
    ["JSON.parse no-whole", () => JSON.parse(without) as unknown],
    ["python no-whole (scan only)", () => parsePythonJson(without)],
  ] as const) {
    const t0 = performance.now();
    for (let i = 0; i < N; i++) fn();
    best[k] = Math.min(best[k] ?? Infinity, (performance.now() - t0) / N);
  }
}
const ms = Object.fromEntries(Object.entries(best).map(([k, v]) => [k, +v.toFixed(3)]));
console.log(
  JSON.stringify({
    page_bytes: withWhole.length,
    ms_per_200_record_page: ms,
    reviver_over_json_parse: +(best["python (a whole float: reviver)"]! / best["JSON.parse"]!).toFixed(2),
    scan_over_json_parse: +(best["python no-whole (scan only)"]! / best["JSON.parse no-whole"]!).toFixed(2),
  }),
);
