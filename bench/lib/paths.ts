// Where the benchmarks live and write: everything they keep between runs goes under .bench-out/.
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dir, '../..');
export const BENCH_OUT = join(REPO_ROOT, '.bench-out');
