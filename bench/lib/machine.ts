// The machine a run measured on, recorded with every result (2 shared cores skew numbers).
import { cpus, loadavg } from 'node:os';

export const CORES = cpus().length;

export function machine() {
  return { bun: Bun.version, cpu: cpus()[0]?.model ?? 'unknown', cores: CORES, loadAverage: loadavg().map((x) => +x.toFixed(2)) };
}
