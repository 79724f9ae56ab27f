// One timed window of a bench: wall time, this process's CPU, and its RSS sampled every 20 ms (the peak,
// and every sample for benches that report how RSS moved through the run).

export const mib = (bytes: number): number => Math.round((bytes / 2 ** 20) * 10) / 10;

export interface Measured {
  seconds: number;
  cpu_seconds: number;
  peak_rss_mib: number;
  /** Every RSS sample in bytes, in order. */
  rssSamples: number[];
}

/** Starts the clocks and the RSS sampler; `stop()` ends both and returns the figures. */
export function startMeasure(): { stop: () => Measured } {
  const rssSamples: number[] = [];
  let peak = process.memoryUsage.rss();
  const sampler = setInterval(() => {
    const rss = process.memoryUsage.rss();
    rssSamples.push(rss);
    peak = Math.max(peak, rss);
  }, 20);
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  return {
    stop: () => {
      const seconds = (performance.now() - started) / 1000;
      const cpu = process.cpuUsage(cpu0);
      clearInterval(sampler);
      return {
        seconds,
        cpu_seconds: Math.round(((cpu.user + cpu.system) / 1e6) * 100) / 100,
        peak_rss_mib: mib(peak),
        rssSamples,
      };
    },
  };
}
