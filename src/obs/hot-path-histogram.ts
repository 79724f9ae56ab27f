// Which histogram a per-entry hot path records into, decided by the meter it is given: the daemon's
// meter (createMetrics) aggregates such histograms itself (src/obs/local-histograms.ts); any other
// meter (a test's, an org-scoped wrapper) gets the SDK's own. Free of SDK imports, so the pipeline
// that asks does not load the SDK.
import type { Histogram, Meter } from "@opentelemetry/api";

export interface LocalHistogramOptions {
  description: string;
  unit: string;
  /** Inclusive upper bounds, ascending; values above the last go to +Inf. */
  boundaries: readonly number[];
}

export interface HistogramFactory {
  create(name: string, options: LocalHistogramOptions): Histogram;
}

const factories = new WeakMap<Meter, HistogramFactory>();

/** Marks `meter` as one whose readers also export what `factory` creates (createMetrics does). */
export function attachHistogramFactory(meter: Meter, factory: HistogramFactory): void {
  factories.set(meter, factory);
}

/** The factory `meter` was marked with, if any: a wrapping meter (org-meter.ts) passes it on. */
export function histogramFactoryOf(meter: Meter): HistogramFactory | undefined {
  return factories.get(meter);
}

/** A histogram for a per-entry hot path, with the same name, description, unit and buckets either way. */
export function hotPathHistogram(meter: Meter, name: string, options: LocalHistogramOptions): Histogram {
  const local = factories.get(meter);
  if (local) return local.create(name, options);
  return meter.createHistogram(name, {
    description: options.description,
    unit: options.unit,
    advice: { explicitBucketBoundaries: [...options.boundaries] },
  });
}
