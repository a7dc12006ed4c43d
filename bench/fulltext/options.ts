// bench/fulltext.ts: command-line options, the settings derived from them, and fixed sizes.
import { parseArgs } from 'node:util';
import type { KnowledgeBaseConfig } from '../../engine';
import { DEFAULT_BM25 } from '../lib/engine-internals';

export type Bm25Params = KnowledgeBaseConfig['bm25'];
export type ChunkingOptions = KnowledgeBaseConfig['chunking'];

// Recall@100 depth. The engine fetches this many chunks, as a search with limit 100 would, so with
// several chunks per document it ranks fewer than 100 documents; peers return whole documents.
export const QUALITY_DEPTH = 100;
export const LATENCY_K = 10;
// Peers are timed on an evenly spread sample of queries: at ~52k items Orama takes about half a
// second per query and MiniSearch (which ranks every match, it has no limit) about 80 ms.
export const ORAMA_TIMED_QUERIES = 30;
export const MINISEARCH_TIMED_QUERIES = 100;
export const PEER_WARMUP_QUERIES = 5;
// In --quick mode the peers' quality is measured on a sample too (Orama: ~30 ms a query at 1×).
export const QUICK_QUALITY_QUERIES = 200;

export const SWEEP_K1 = [0.6, 0.8, 0.9, 1.0, 1.2, 1.4, 1.6];
export const SWEEP_B = [0.3, 0.4, 0.5, 0.6, 0.75, 0.9];
export const SWEEP_SIZES = [1000, 2000, 4000];
// Overlap scales with the chunk size, as in the 2000/200 default.
export const SWEEP_OVERLAP_RATIO = 0.1;

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    full: { type: 'boolean', default: false },
    sweep: { type: 'boolean', default: false },
    json: { type: 'string' },
    k1: { type: 'string' },
    b: { type: 'string' },
    size: { type: 'string' },
    overlap: { type: 'string' },
    replicas: { type: 'string' },
    'no-curve': { type: 'boolean', default: false },
    /** Rank chunks by their own BM25 alone, as the engine did before item-aware scoring. */
    plain: { type: 'boolean', default: false },
    /** Typo tolerance and the last word as a prefix, as the endpoint's default (on) or off. */
    typo: { type: 'string', default: 'on' },
  },
  strict: true,
});

function numberArg(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number, got "${value}"`);
  return n;
}

if (args.quick && args.full) throw new Error('--quick and --full exclude each other');
export const quick = args.quick;
export const plain = args.plain;
if (args.typo !== 'on' && args.typo !== 'off') throw new Error(`--typo must be on or off, got "${args.typo}"`);
export const typo = args.typo === 'on';
export const bm25: Bm25Params = { k1: numberArg('k1', args.k1, DEFAULT_BM25.k1), b: numberArg('b', args.b, DEFAULT_BM25.b) };
// The engine takes chunking from each knowledge base's config and has no default of its own.
export const chunking: ChunkingOptions = { size: numberArg('size', args.size, 2000), overlap: numberArg('overlap', args.overlap, 200) };
export const replicas = Math.max(1, Math.round(numberArg('replicas', args.replicas, quick ? 2 : 10)));
export const passes = quick ? 2 : 3;
export const curveSizes = quick ? [2_000, 10_000] : [10_000, 50_000, 200_000];
export { args };
