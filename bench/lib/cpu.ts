// CPU time from Linux /proc. utime and stime count clock ticks of sysconf(_SC_CLK_TCK), which is
// asked for once rather than assumed to be 100.
import { readdirSync, readFileSync } from 'node:fs';
import { CORES } from './machine';

const CLK_TCK = (() => {
  const out = Bun.spawnSync(['getconf', 'CLK_TCK']).stdout.toString().trim();
  return Number(out) > 0 ? Number(out) : 100;
})();

/** utime + stime of a /proc/…/stat line, in seconds (fields 14 and 15, counted after the command name). */
function statSeconds(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** CPU seconds (user + system, every thread) of a process so far; NaN once it is gone. */
export function cpuSecondsOf(pid: number | 'self'): number {
  try {
    return statSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return NaN;
  }
}

/** CPU seconds of each thread of this process (/proc/self/task), by thread id. */
export function threadCpuSeconds(): Map<string, { name: string; seconds: number }> {
  const out = new Map<string, { name: string; seconds: number }>();
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      try {
        const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        out.set(tid, { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), seconds: statSeconds(stat) });
      } catch {}
    }
  } catch {}
  return out;
}

/** Busy and total jiffies of the whole machine (every process), from /proc/stat. */
export function machineJiffies(): { busy: number; total: number } {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = (line[3] ?? 0) + (line[4] ?? 0);
    const total = line.reduce((s, x) => s + x, 0);
    return { busy: total - idle, total };
  } catch {
    return { busy: NaN, total: NaN };
  }
}

/** Share of the machine busy between two machineJiffies() readings. */
export const machineShare = (from: { busy: number; total: number }, to: { busy: number; total: number }) =>
  (to.busy - from.busy) / Math.max(1, to.total - from.total);

/**
 * CPU use of this process over a stretch of work. Bun's process.cpuUsage() is
 * getrusage(RUSAGE_SELF), which covers every thread (worker threads included); /proc/self/stat is
 * read beside it as a check.
 */
export class CpuMeter {
  private readonly threads0 = threadCpuSeconds();
  private readonly t0 = performance.now();
  private readonly usage0 = process.cpuUsage();
  private readonly stat0 = cpuSecondsOf('self');
  private readonly sys0 = machineJiffies();
  private last = { t: this.t0, stat: this.stat0 };
  /** Share of all cores used by this process in each ~1 s window. */
  readonly windows: number[] = [];

  sample(): void {
    const t = performance.now();
    const stat = cpuSecondsOf('self');
    if (t - this.last.t >= 500) {
      this.windows.push((stat - this.last.stat) / ((t - this.last.t) / 1000) / CORES);
      this.last = { t, stat };
    }
  }

  finish() {
    const wall = (performance.now() - this.t0) / 1000;
    const usage = process.cpuUsage(this.usage0);
    const cpuUsageSeconds = (usage.user + usage.system) / 1e6;
    const procStatSeconds = cpuSecondsOf('self') - this.stat0;
    const sys = machineJiffies();
    const sorted = [...this.windows].sort((a, b) => a - b);
    const threads = [...threadCpuSeconds()]
      .map(([tid, t]) => ({ tid, name: t.name, coreShare: (t.seconds - (this.threads0.get(tid)?.seconds ?? 0)) / wall }))
      .sort((a, b) => b.coreShare - a.coreShare)
      .slice(0, 5);
    return {
      /** The busiest threads, each as a share of one core (a busy worker thread is near 1). */
      threads,
      wallSeconds: wall,
      cpuUsageSeconds,
      procStatSeconds,
      /** process CPU seconds / wall seconds / cores. */
      processShare: cpuUsageSeconds / wall / CORES,
      procStatShare: procStatSeconds / wall / CORES,
      /** Whole machine, every process: shows contention from anything else running. */
      machineShare: machineShare(this.sys0, sys),
      windowMedianShare: sorted[Math.floor(sorted.length / 2)] ?? NaN,
      windowP10Share: sorted[Math.floor(sorted.length / 10)] ?? NaN,
    };
  }
}

export type CpuReport = ReturnType<CpuMeter['finish']>;
