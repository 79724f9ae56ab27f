// `npm run dashboards`: writes every dashboard's JSON under deploy/grafana/dashboards/ and removes
// JSON files no dashboard produces any more.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { DASHBOARDS_DIR, dashboards, render } from "./dashboards.ts";

mkdirSync(DASHBOARDS_DIR, { recursive: true });
const built = dashboards();
for (const [file, d] of Object.entries(built)) writeFileSync(new URL(file, DASHBOARDS_DIR), render(d));
for (const file of readdirSync(DASHBOARDS_DIR))
  if (file.endsWith(".json") && !(file in built)) rmSync(new URL(file, DASHBOARDS_DIR));
console.log(`wrote ${Object.keys(built).length} dashboards to ${DASHBOARDS_DIR.pathname}`);
