// Server configuration from environment variables, each with a documented default (README).
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';

function int(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min} (got "${raw}")`);
  return n;
}

function num(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number (got "${raw}")`);
  return n;
}

const MiB = 1024 * 1024;

export function loadConfig() {
  return {
    port: int('PORT', 3000),
    host: process.env.HOST || '0.0.0.0',
    dataDir: resolve(process.env.DATA_DIR || './data'),
    /** `org-id:key,org-id:key` */
    apiKeys: process.env.KB_API_KEYS ?? '',
    limits: {
      maxTextBytes: int('MAX_TEXT_BYTES', 10 * MiB, 1),
      maxJsonBodyBytes: int('MAX_JSON_BODY_BYTES', 12 * MiB, 1024),
      maxFileBytes: int('MAX_FILE_BYTES', 50 * MiB, 1),
      maxQueryChars: 4096,
      maxSearchLimit: 100,
      maxPageLimit: 100,
    },
    /** Upper bound for `?wait=true`. */
    waitTimeoutMs: int('WAIT_TIMEOUT_MS', 30_000, 1),
    ingestWorkers: int('INGEST_WORKERS', Math.max(1, availableParallelism() - 1), 1),
    walSegmentBytes: int('WAL_SEGMENT_BYTES', 64 * MiB, 4096),
    chunking: {
      size: int('CHUNK_SIZE', 2000, 100),
      overlap: int('CHUNK_OVERLAP', 200, 0),
    },
    // k1 1.2, b 0.75 sit on the plateau of the SciFact sweep (bench/fulltext.ts --sweep).
    bm25: { k1: num('BM25_K1', 1.2), b: num('BM25_B', 0.75) },
    logLevel: process.env.LOG_LEVEL || 'info',
  };
}

export type Config = ReturnType<typeof loadConfig>;
