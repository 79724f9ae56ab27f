// One timed window of a bench: wall time, this process's CPU, and its RSS sampled every 20 ms (the peak,
// and every sample for benches that report how RSS moved through the run).

import { readFileSync } from "node:fs";

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

/**
 * A process's VmRSS (now), VmHWM (its peak, kept by the kernel), or the two parts of its RSS: RssAnon
 * (its own memory: heaps, malloc) and RssFile (pages of the node binary and libraries it has touched,
 * shared and reclaimable), in MiB, from /proc (Linux).
 */
export function vmMib(pid: number, field: "VmRSS" | "VmHWM" | "RssAnon" | "RssFile"): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? mib(Number(m[1]) * 1024) : 0;
}

/**
 * startMeasure for another process: wall time here, its RSS sampled every 20 ms and its peak from the
 * kernel's high-water mark (which no sampling interval can miss). Its CPU it reports itself.
 */
export function startProcMeasure(pid: number): { stop: () => Omit<Measured, "cpu_seconds"> } {
  const rssSamples: number[] = [];
  const sampler = setInterval(() => rssSamples.push(vmMib(pid, "VmRSS") * 2 ** 20), 20);
  const started = performance.now();
  return {
    stop: () => {
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      return { seconds, peak_rss_mib: vmMib(pid, "VmHWM"), rssSamples };
    },
  };
}
