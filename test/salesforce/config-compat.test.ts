// Compile-time proof that the parsed config feeds auth and the Pub/Sub source without an adapter:
// `tsc` fails here the day the schema and these settings drift apart.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { SalesforceConfig, SourcesConfig } from "../../src/config/schema.ts";
import type { SalesforceSettings } from "../../src/salesforce/auth.ts";
import type { PubSubSettings } from "../../src/sources/pubsub/source.ts";
import type { OverlapSourcesConfig } from "../../src/sources/overlap.ts";

const salesforce = (c: SalesforceConfig): SalesforceSettings => c;
const pubsub = (c: SourcesConfig["pubsub"]): PubSubSettings => c;
const overlap = (c: SourcesConfig): OverlapSourcesConfig => c;

test("the config's salesforce, sources.pubsub and sources blocks are accepted as they are", () => {
  assert.equal(typeof salesforce, "function");
  assert.equal(typeof pubsub, "function");
  assert.equal(typeof overlap, "function");
});
