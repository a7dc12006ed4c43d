// Named phases of a benchmark: a header when each starts, its duration when it ends.
import { loadavg } from 'node:os';
import { secs } from './format';

/**
 * `phase(name, run)` prints a section header and its duration; `phases` collects the durations
 * (ms). With `load`, the 1-minute load average is printed at both ends (other work on 2 cores
 * skews long phases).
 */
export function phaseTimer(options: { load?: boolean } = {}) {
  const phases: Record<string, number> = {};
  const load = () => loadavg()[0]!.toFixed(2);
  async function phase<T>(name: string, run: () => T | Promise<T>): Promise<T> {
    console.log(`\n== ${name}${options.load ? `   (load average ${load()})` : ''}`);
    const t = performance.now();
    const value = await run();
    phases[name] = Math.round(performance.now() - t);
    console.log(`   (${secs(phases[name])}${options.load ? `; load average now ${load()}` : ''})`);
    return value;
  }
  return { phases, phase };
}
