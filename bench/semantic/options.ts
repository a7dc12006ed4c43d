// bench/semantic.ts: command-line options, sizes, targets and where data is kept.
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_OUT, REPO_ROOT } from '../lib/paths';

export const OUT_ROOT = join(BENCH_OUT, 'semantic');
export const MODELS_DIR = process.env.BENCH_MODELS_DIR ?? resolve(REPO_ROOT, '..', 'shared', 'models');
export const ORG = 'org_bench';
export const DOCUMENT_WORKERS = 2;

export const PARTS = ['quality', 'vectors', 'http', 'memory', 'throughput', 'ingest', 'limit'] as const;
export type Part = (typeof PARTS)[number];

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    json: { type: 'string' },
    models: { type: 'string' },
    parts: { type: 'string' },
    fresh: { type: 'boolean', default: false },
    /** HIGH_QUALITY_MODEL of the server in the http part (default auto: the best model under MODELS_DIR). */
    'http-model': { type: 'string', default: 'auto' },
    /** Extra environment of the ingest part's server (KEY=VALUE,…); without it the server runs on its defaults. */
    'ingest-env': { type: 'string' },
    /** Knowledge base type of the ingest part. */
    'ingest-type': { type: 'string', default: 'TEXT_HIGH_QUALITY' },
    /** Model of the limit part (`<org>/<name>`, under MODELS_DIR or the shipped models folder) and its precision. */
    'limit-model': { type: 'string', default: 'Xenova/all-MiniLM-L6-v2' },
    'limit-precision': { type: 'string', default: 'int8' },
  },
  strict: true,
});
export const quick = args.quick;
export const parts = new Set<Part>(
  (args.parts ?? PARTS.join(','))
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => {
      if (!(PARTS as readonly string[]).includes(p)) throw new Error(`unknown part "${p}" (use ${PARTS.join(', ')})`);
      return p as Part;
    }),
);

export const SIZES = {
  qualityQueries: quick ? 100 : Infinity,
  otherDocs: quick ? 1000 : Infinity,
  vectorTarget: quick ? 10_000 : 50_000,
  curve: quick ? [250, 500, 1_000, 2_000, 5_000, 10_000] : [250, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000],
  curveQueries: quick ? 100 : 200,
  latencyPasses: quick ? 2 : 3,
  efSweep: quick ? [128, 256] : [96, 128, 192, 256, 384],
  httpSeed: quick ? 80 : 200,
  /** The rest of the corpus (4,983 documents) in a full run: the whole-corpus timing. */
  httpBulk: quick ? 200 : Infinity,
  httpSearches: quick ? 50 : 200,
  httpWriters: 4,
};
export const RECALL_TARGET = 0.98;
export const P50_TARGET_MS = 1;
// Noise added to each replicated vector before renormalizing: norm ≈ 0.2, so a copy keeps a cosine
// of about 0.98 with its original (near duplicates, as re-uploaded or overlapping chunks are).
export const NOISE_NORM = 0.2;
export { args };
