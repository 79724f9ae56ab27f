// Writer schemas by id, fetched once (single-flight per id) and kept for the process: an id never
// changes meaning (§3.5).
import avsc from "avsc";
import type { Gauge } from "@opentelemetry/api";
import { pythonDecodeOptions } from "./avro-python.ts";
import { SchemaFetchError } from "./errors.ts";

export type SchemaFetcher = (schemaId: string, signal?: AbortSignal) => Promise<string>;

export class SchemaCache {
  readonly #types = new Map<string, avsc.Type>();
  readonly #inflight = new Map<string, Promise<avsc.Type>>();
  readonly #fetch: SchemaFetcher;
  readonly #size: Gauge | undefined;

  constructor(fetch: SchemaFetcher, sizeGauge?: Gauge) {
    this.#fetch = fetch;
    this.#size = sizeGauge;
  }

  /** The cached type, without any await: the hot path asks this first. */
  cached(schemaId: string): avsc.Type | undefined {
    return this.#types.get(schemaId);
  }

  get(schemaId: string, signal?: AbortSignal): Promise<avsc.Type> {
    const hit = this.#types.get(schemaId);
    if (hit) return Promise.resolve(hit);
    let pending = this.#inflight.get(schemaId);
    if (!pending) {
      pending = this.#load(schemaId, signal).finally(() => this.#inflight.delete(schemaId));
      this.#inflight.set(schemaId, pending);
    }
    return pending;
  }

  async #load(schemaId: string, signal?: AbortSignal): Promise<avsc.Type> {
    let json: string;
    try {
      json = await this.#fetch(schemaId, signal);
    } catch (err) {
      throw new SchemaFetchError(schemaId, `GetSchema ${schemaId} failed: ${describe(err)}`, { cause: err });
    }
    let type: avsc.Type;
    try {
      type = parseSchema(json);
    } catch (err) {
      throw new SchemaFetchError(
        schemaId,
        `schema ${schemaId} is not a usable Avro schema: ${describe(err)}`,
        {
          cause: err,
        },
      );
    }
    this.#types.set(schemaId, type);
    this.#size?.record(this.#types.size);
    return type;
  }
}

/**
 * Unions decode unwrapped (a plain value or null), longs as numbers, and doubles, bytes and logical
 * types as the Python version's fastavro reader gives them (avro-python.ts). A schema whose unions
 * avsc cannot unwrap falls back to its `auto` mode.
 */
export function parseSchema(json: string): avsc.Type {
  const schema = JSON.parse(json) as avsc.Schema;
  try {
    return avsc.Type.forSchema(schema, pythonDecodeOptions(false));
  } catch {
    return avsc.Type.forSchema(schema, pythonDecodeOptions("auto"));
  }
}

function describe(err: unknown): string {
  if (typeof err === "object" && err !== null && "details" in err && typeof err.details === "string") {
    return err.details;
  }
  return err instanceof Error ? err.message : String(err);
}
