// bench/snapshot.ts: command-line options and the settings derived from them.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_OUT } from '../lib/paths';

const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    quick: { type: 'boolean', default: false },
    json: { type: 'string' },
    chunks: { type: 'string' },
    runs: { type: 'string' },
    tail: { type: 'string' },
    rate: { type: 'string' },
    fresh: { type: 'boolean', default: false },
    'graph-wait': { type: 'string' },
    parts: { type: 'string', default: 'restart,stall' },
    stub: { type: 'boolean', default: false },
  },
  strict: true,
});
export { args };

export const quick = args.quick;
export const OUT = join(BENCH_OUT, 'snapshot');
// Quick: a smoke test in about a minute (8k chunks keep the graph path: the threshold is 5k vectors).
export const targetChunks = Number(args.chunks ?? (quick ? 8_000 : 100_000));
export const runs = Number(args.runs ?? 3);
export const tailItems = Number(args.tail ?? (quick ? 400 : 5_000));
export const rate = Number(args.rate ?? 200);
export const graphWaitS = Number(args['graph-wait'] ?? (quick ? 0 : 180));
export const baselineMs = quick ? 2_000 : 10_000;
export const afterMs = quick ? 1_000 : 5_000;
export const parts = new Set(
  args.parts
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean),
);
for (const part of parts) if (part !== 'restart' && part !== 'stall') throw new Error(`unknown part "${part}" (use restart, stall)`);
export const ORG = 'org_bench';
export const API_KEY = 'bench-snapshot-key-0123456789';
export const CHUNKING = { size: 1000, overlap: 100 };
