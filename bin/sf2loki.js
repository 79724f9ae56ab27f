#!/usr/bin/env node
// In a source checkout, run the TypeScript directly (Node >= 22.18 strips types), so `npx sf2loki`
// never runs a stale build; an installed package has no src/ and runs the compiled dist/.
import { existsSync } from "node:fs";

const src = new URL("../src/cli/main.ts", import.meta.url);
const inCheckout = existsSync(src) && !import.meta.url.includes("/node_modules/");
await import(inCheckout ? src.href : new URL("../dist/cli/main.js", import.meta.url).href);
