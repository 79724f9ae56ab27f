// How a benchmark figure is sampled: each sample is a timed window of at least `minMs`, made of as
// many back-to-back passes as it takes (a pass under a second is mostly scheduler noise on a shared
// host), and a figure is the median of its samples with the spread beside it, so a reader sees how
// far to trust it before comparing it with anything.

/** A figure: the median of its samples and how far they strayed from it. */
export interface Figure {
  median: number;
  /** (max - min) / median; 0.1 means the samples span 10 % of the median. */
  spread: number;
  samples: number[];
}

export function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  // An even count takes the mean of the middle two, so two samples do not pick the larger one.
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Rates (≥ 100) to integers, ratios and per-entry microseconds to three decimals. */
function tidy(x: number): number {
  return Math.abs(x) >= 100 ? Math.round(x) : Math.round(x * 1000) / 1000;
}

export function summarise(samples: readonly number[]): Figure {
  if (samples.length === 0) throw new Error("a figure needs at least one sample");
  const mid = median(samples);
  const spread = mid === 0 ? 0 : (Math.max(...samples) - Math.min(...samples)) / Math.abs(mid);
  return { median: tidy(mid), spread: Math.round(spread * 1000) / 1000, samples: samples.map(tidy) };
}

/** What a timed pass must report for a window to add it up. */
export interface TimedPass {
  /** Wall ms of the timed part only (set-up and checks excluded). */
  ms: number;
}

/**
 * Runs `pass` back to back until the timed ms add up to `minMs`, and returns every pass. A pass
 * that is long enough alone makes a window of one.
 */
export async function timedWindow<P extends TimedPass>(
  minMs: number,
  pass: () => Promise<P> | P,
): Promise<P[]> {
  const passes: P[] = [];
  let ms = 0;
  while (ms < minMs || passes.length === 0) {
    const p = await pass();
    passes.push(p);
    ms += p.ms;
  }
  return passes;
}

/** Σ of one numeric field over a window's passes. */
export function total<P>(passes: readonly P[], field: (p: P) => number): number {
  let sum = 0;
  for (const p of passes) sum += field(p);
  return sum;
}

/** The sample whose value is the median (an odd count has exactly one), for its detail fields. */
export function medianSample<T>(items: readonly T[], value: (t: T) => number): T {
  const sorted = [...items].sort((a, b) => value(a) - value(b));
  return sorted[(sorted.length - 1) >> 1]!;
}
