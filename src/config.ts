// Server configuration from environment variables, each with a documented default (README).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism, hostname } from 'node:os';
import { resolve } from 'node:path';
import { parseCorsOrigins } from './http/cors';
import { ShardSet, type NatsAuth } from '../engine';

/** Environment variables: `process.env` at start, or a plain object in tests. */
export type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min} (got "${raw}")`);
  return n;
}

function num(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number (got "${raw}")`);
  return n;
}

const MiB = 1024 * 1024;

function s3Config(env: Env) {
  const bucket = env.S3_BUCKET;
  if (!bucket) return undefined;
  // S3_ENDPOINT is a URL (http://127.0.0.1:9000) or a host name (s3.amazonaws.com, TLS).
  const raw = env.S3_ENDPOINT || 's3.amazonaws.com';
  const url = raw.includes('://') ? new URL(raw) : new URL(`https://${raw}`);
  const useSSL = env.S3_USE_SSL ? env.S3_USE_SSL === 'true' : url.protocol === 'https:';
  return {
    endpoint: url.hostname,
    port: url.port ? Number(url.port) : undefined,
    useSSL,
    accessKey: env.S3_ACCESS_KEY ?? '',
    secretKey: env.S3_SECRET_KEY ?? '',
    region: env.S3_REGION || undefined,
    bucket,
    prefix: env.S3_PREFIX || '',
    partSize: Math.round(num(env, 'S3_PART_SIZE_MB', 64) * MiB),
    pathStyle: env.S3_PATH_STYLE !== 'false',
  };
}

/** NODE_SHARDS of CLUSTER_SHARDS: `all` (default) or a list like `0,2,5-7`. */
function shardsHeld(env: Env): ShardSet {
  try {
    return ShardSet.parse(env.NODE_SHARDS, int(env, 'CLUSTER_SHARDS', 1, 1));
  } catch (err) {
    throw new Error(`NODE_SHARDS / CLUSTER_SHARDS: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** A file a variable names, there at start (not found only at the first reconnect); absolute. */
function existingFile(env: Env, name: string): string | undefined {
  const path = env[name];
  if (!path) return undefined;
  if (!existsSync(path) || !statSync(path).isFile()) throw new Error(`${name}: no such file "${path}"`);
  return resolve(path);
}

/** Credentials and TLS of the cluster's NATS connections (README, "Running a cluster"). */
function clusterNatsAuth(env: Env, urls: string[]): NatsAuth {
  for (const url of urls) {
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
    if (scheme !== undefined && scheme !== 'nats' && scheme !== 'tls')
      throw new Error(`CLUSTER_NATS_URLS: "${url}" is neither nats://host:port nor tls://host:port`);
  }
  const credsFile = existingFile(env, 'CLUSTER_NATS_CREDS');
  if (credsFile && !/BEGIN NATS USER JWT[\s\S]*BEGIN USER NKEY SEED/.test(readFileSync(credsFile, 'utf8'))) {
    throw new Error(`CLUSTER_NATS_CREDS: "${credsFile}" is not a NATS creds file (a user JWT, then an nkey seed)`);
  }
  const user = env.CLUSTER_NATS_USER || undefined;
  const password = env.CLUSTER_NATS_PASSWORD || undefined;
  if (user !== undefined && password === undefined) throw new Error('CLUSTER_NATS_USER is set without CLUSTER_NATS_PASSWORD');
  if (password !== undefined && user === undefined) throw new Error('CLUSTER_NATS_PASSWORD is set without CLUSTER_NATS_USER');
  const token = env.CLUSTER_NATS_TOKEN || undefined;
  const nkeySeed = env.CLUSTER_NATS_NKEY_SEED?.trim() || undefined;
  if (nkeySeed !== undefined && !/^SU[A-Z2-7]{56}$/.test(nkeySeed))
    throw new Error('CLUSTER_NATS_NKEY_SEED must be an nkey user seed (SU followed by 56 characters)');
  const ways = [credsFile && 'CLUSTER_NATS_CREDS', user && 'CLUSTER_NATS_USER', token && 'CLUSTER_NATS_TOKEN', nkeySeed && 'CLUSTER_NATS_NKEY_SEED'].filter(
    Boolean,
  );
  if (ways.length > 1) {
    throw new Error(
      `${ways.join(' and ')} are set: NATS takes one way of authenticating (CLUSTER_NATS_CREDS, CLUSTER_NATS_USER with CLUSTER_NATS_PASSWORD, CLUSTER_NATS_TOKEN or CLUSTER_NATS_NKEY_SEED)`,
    );
  }
  const caFile = existingFile(env, 'CLUSTER_NATS_TLS_CA');
  const certFile = existingFile(env, 'CLUSTER_NATS_TLS_CERT');
  const keyFile = existingFile(env, 'CLUSTER_NATS_TLS_KEY');
  if (certFile !== undefined && keyFile === undefined) throw new Error('CLUSTER_NATS_TLS_CERT is set without CLUSTER_NATS_TLS_KEY');
  if (keyFile !== undefined && certFile === undefined) throw new Error('CLUSTER_NATS_TLS_KEY is set without CLUSTER_NATS_TLS_CERT');
  // Either of them (or a tls:// URL, engine/log/nats.ts): TLS is required, never a plain connection.
  const tls = caFile || certFile ? { ...(caFile && { caFile }), ...(certFile && keyFile && { certFile, keyFile }) } : undefined;
  return { ...(credsFile && { credsFile }), ...(user && { user, password }), ...(token && { token }), ...(nkeySeed && { nkeySeed }), ...(tls && { tls }) };
}

/** Cluster mode when CLUSTER_NATS_URLS is set (see README, "Running a cluster"). */
function clusterConfig(env: Env) {
  const urls = (env.CLUSTER_NATS_URLS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (urls.length === 0) return undefined;
  const stream = env.CLUSTER_STREAM || 'KB_LOG';
  if (!/^[A-Za-z0-9_-]+$/.test(stream)) throw new Error(`CLUSTER_STREAM may hold letters, digits, _ and - only (got "${stream}")`);
  return {
    servers: urls,
    /** Credentials and TLS of every NATS connection (CLUSTER_NATS_CREDS, …_USER/…_PASSWORD, …_TOKEN, …_NKEY_SEED, …_TLS_CA, …_TLS_CERT/…_TLS_KEY). */
    natsAuth: clusterNatsAuth(env, urls),
    stream,
    replicas: int(env, 'CLUSTER_REPLICAS', 3, 1),
    nodeId: env.NODE_ID || hostname(),
    /** Where other nodes reach this one (requests for its shards are forwarded there); default: http://<HOST, or the machine's name when HOST listens everywhere>:<port>. */
    advertiseUrl: env.NODE_ADVERTISE_URL || undefined,
    /** Knowledge bases hash to this many shards; fixed when the cluster's stream is made. */
    shards: shardsHeld(env),
    jobAckWaitMs: int(env, 'CLUSTER_JOB_ACK_WAIT_MS', 30_000, 1000),
    jobFollowWaitMs: int(env, 'CLUSTER_JOB_FOLLOW_WAIT_MS', 30_000, 100),
    jobSweepMs: int(env, 'CLUSTER_JOB_SWEEP_MS', 30_000, 100),
    /** Records kept in the stream below what this node's snapshots cover. */
    purgeMarginRecords: int(env, 'CLUSTER_PURGE_MARGIN', 10_000, 0),
    /** Records a node may be behind the stream and still answer /ready 200. */
    maxLag: int(env, 'CLUSTER_MAX_LAG', 10_000, 0),
  };
}

export function loadConfig(env: Env = process.env) {
  return {
    port: int(env, 'PORT', 3000),
    host: env.HOST || '0.0.0.0',
    dataDir: resolve(env.DATA_DIR || './data'),
    /** `org-id:key,org-id:key` */
    apiKeys: env.KB_API_KEYS ?? '',
    limits: {
      maxTextBytes: int(env, 'MAX_TEXT_BYTES', 10 * MiB, 1),
      maxJsonBodyBytes: int(env, 'MAX_JSON_BODY_BYTES', 12 * MiB, 1024),
      maxFileBytes: int(env, 'MAX_FILE_BYTES', 50 * MiB, 1),
      /** Longest search query (characters, once trimmed) and most hits one search may ask for. */
      maxQueryChars: int(env, 'MAX_QUERY_CHARS', 4096, 1),
      maxSearchLimit: int(env, 'MAX_SEARCH_LIMIT', 100, 1),
      maxPageLimit: 100,
      /** Characters of each item's text in content lists (the whole text is one GET away). */
      listTextChars: int(env, 'LIST_TEXT_CHARS', 2000, 1),
      /** Pages of an uploaded document (PDF); more → 413. */
      maxFilePages: int(env, 'MAX_FILE_PAGES', 2000, 1),
      /** An upload's body must arrive within this long: 408 otherwise (a dripped upload holds a connection and a temp file). */
      uploadReceiveMs: int(env, 'UPLOAD_RECEIVE_TIMEOUT_S', 90, 1) * 1000,
      /** One JSONL import (POST …/contents/import): its body and its lines; more → 413 (send the rest in another request). */
      maxImportBytes: int(env, 'MAX_IMPORT_BYTES', 32 * MiB, 1024),
      maxImportLines: int(env, 'MAX_IMPORT_LINES', 10_000, 1),
    },
    /** What one organization may hold; 0 = unbounded. */
    quotas: { knowledgeBases: int(env, 'MAX_KNOWLEDGE_BASES_PER_ORG', 1000, 0), contents: int(env, 'MAX_CONTENTS_PER_ORG', 1_000_000, 0) },
    /** Embedding failures are retried this many times in all, backing off from the base to the cap. */
    embeddingRetry: {
      attempts: int(env, 'EMBEDDING_RETRY_ATTEMPTS', 8, 1),
      baseMs: int(env, 'EMBEDDING_RETRY_BASE_MS', 2000, 1),
      maxMs: int(env, 'EMBEDDING_RETRY_MAX_MS', 60_000, 1),
    },
    /** Per-organization token bucket; RATE_LIMIT_RPS=0 turns it off. */
    rateLimit: { rate: num(env, 'RATE_LIMIT_RPS', 1000), burst: int(env, 'RATE_LIMIT_BURST', 2000, 1) },
    /** Per client address: requests whose credentials are refused (401); past it they get 429. */
    refusedAuthLimit: { rate: num(env, 'AUTH_REFUSED_RPS', 10), burst: int(env, 'AUTH_REFUSED_BURST', 200, 1) },
    snapshots: {
      intervalMs: num(env, 'SNAPSHOT_INTERVAL_MIN', 15) * 60_000,
      logBytes: num(env, 'SNAPSHOT_LOG_MB', 256) * MiB,
      logGrowth: num(env, 'SNAPSHOT_LOG_GROWTH', 0.5),
      dumpChunks: int(env, 'SNAPSHOT_DUMP_MAX_CHUNKS', 1_000_000, 0),
      shutdownLogBytes: num(env, 'SNAPSHOT_SHUTDOWN_MIN_LOG_MB', 8) * MiB,
      idleMs: num(env, 'SNAPSHOT_IDLE_S', 10) * 1000,
      keep: int(env, 'SNAPSHOT_KEEP', 2, 1),
      checkMs: int(env, 'SNAPSHOT_CHECK_MS', 5000, 10),
      maxBackoffMs: int(env, 'SNAPSHOT_MAX_BACKOFF_MS', 300_000, 10),
      onShutdown: env.SNAPSHOT_ON_SHUTDOWN !== 'false',
    },
    /** MinIO/S3 snapshot store; unset S3_BUCKET keeps snapshots on the local disk only. */
    s3: s3Config(env),
    /** Origins whose pages may call the API from a browser (`*`, or comma-separated origins); unset: none. */
    cors: parseCorsOrigins(env.CORS_ORIGINS),
    /** Seconds a connection may stay silent; uploads and `?wait=true` get their own, longer bound. */
    idleTimeoutSeconds: int(env, 'REQUEST_IDLE_TIMEOUT_S', 30, 1),
    /** On SIGTERM/SIGINT: how long in-flight requests may finish before they are cut. */
    shutdownDrainMs: int(env, 'SHUTDOWN_DRAIN_MS', 10_000, 0),
    /** Upper bound for `?wait=true`. */
    waitTimeoutMs: int(env, 'WAIT_TIMEOUT_MS', 30_000, 1),
    /** Extraction worker threads, and the time, memory and DOCX XML limits of one file. */
    extraction: {
      /** The heavy lane (PDF, DOCX, images); text formats have a lane of their own, so they never wait for OCR. */
      workers: int(env, 'EXTRACTION_WORKERS', 2, 1),
      textWorkers: int(env, 'EXTRACTION_TEXT_WORKERS', 2, 1),
      /** Most heavy-lane workers one organization holds at once: all but one, so another organization always finds one. */
      workersPerOrg: int(env, 'EXTRACTION_WORKERS_PER_ORG', Math.max(1, int(env, 'EXTRACTION_WORKERS', 2, 1) - 1), 1),
      timeoutMs: int(env, 'EXTRACTION_TIMEOUT_MS', 120_000, 100),
      /** The OCR budget of one image: past it the image is refused (413) and its worker replaced. */
      ocrTimeoutMs: int(env, 'OCR_TIMEOUT_MS', 30_000, 100),
      memoryBytes: int(env, 'EXTRACTION_MEMORY_MB', 1024, 64) * MiB,
      maxDocxXmlBytes: int(env, 'DOCX_MAX_XML_MB', 6, 1) * MiB,
    },
    /** Document-lane workers: chunking, analysis and embedding (one per core by default). */
    ingestWorkers: int(env, 'INGEST_WORKERS', Math.max(1, availableParallelism()), 1),
    /** Query-embedding workers: a lane of their own, so searches never queue behind ingestion. */
    queryWorkers: int(env, 'QUERY_WORKERS', 1, 1),
    embedding: {
      modelDir: resolve(env.EMBEDDING_MODEL_DIR || './models'),
      allowRemoteModels: env.EMBEDDING_ALLOW_REMOTE === 'true',
      /** Where `models pull` downloads from: the Hugging Face hub or a mirror in its URL layout. */
      hubUrl: env.EMBEDDING_HUB_URL || 'https://huggingface.co',
      highQualityModel: env.HIGH_QUALITY_MODEL || 'auto',
      costEffectiveModel: env.COST_EFFECTIVE_MODEL || 'shipped',
      costEffectiveQuantization: (env.COST_EFFECTIVE_QUANTIZATION === 'f32' ? 'f32' : 'i8') as 'f32' | 'i8',
      /** ONNX export of transformers models: fp32 by default (int8 was 1.5× as fast here but lost 0.021 nDCG@10 on SciFact; see README). */
      precision: (env.EMBEDDING_PRECISION === 'int8' ? 'int8' : 'fp32') as 'fp32' | 'int8',
      threads: int(env, 'EMBEDDING_THREADS', 1, 1),
      batchSize: int(env, 'EMBEDDING_BATCH_SIZE', 16, 1),
      /** HTTP and USE-Lite models; transformers.js models batch by word pieces (256 once padded; engine/embedding/batches.ts). */
      batchChars: int(env, 'EMBEDDING_BATCH_CHARS', 2048, 1),
      /** Most word pieces in one call of a transformers.js model once padded (one full MiniLM chunk). */
      batchTokens: int(env, 'EMBEDDING_BATCH_TOKENS', 256, 1),
      queryCacheSize: int(env, 'QUERY_CACHE_SIZE', 2048, 0),
      http: {
        url: env.EMBEDDING_HTTP_URL || '',
        apiKey: env.EMBEDDING_HTTP_API_KEY || undefined,
        dimensions: int(env, 'EMBEDDING_HTTP_DIMENSIONS', 0, 0),
        timeoutMs: int(env, 'EMBEDDING_HTTP_TIMEOUT_MS', 30_000, 1),
        retries: int(env, 'EMBEDDING_HTTP_RETRIES', 3, 0),
      },
    },
    hnsw: {
      // 32 rather than 16: on near-duplicate-heavy data (bench/scale.ts's vectors, 1M) the graph then
      // reaches recall@10 0.944 at a beam of 1,280 where 16 needed 2,048 for 0.941 (25% less time a
      // search), for 128 more bytes a vector and ~30% more time to build it (README, "Scale").
      connectivity: int(env, 'HNSW_CONNECTIVITY', 32, 2),
      expansionAdd: int(env, 'HNSW_EXPANSION_ADD', 128, 1),
      // 256 reaches recall@10 ≥ 0.98 at 50k vectors in p50 ≈ 0.5 ms (bench/semantic.ts efSearch sweep).
      expansionSearch: int(env, 'HNSW_EXPANSION_SEARCH', 256, 1),
    },
    walSegmentBytes: int(env, 'WAL_SEGMENT_BYTES', 64 * MiB, 4096),
    /** Unset: sized per model (see src/kb-types.ts). */
    chunking: {
      size: env.CHUNK_SIZE ? int(env, 'CHUNK_SIZE', 2000, 100) : undefined,
      overlap: env.CHUNK_OVERLAP ? int(env, 'CHUNK_OVERLAP', 200, 0) : undefined,
    },
    // k1 1.2, b 0.75 sit on the plateau of the SciFact sweep (bench/fulltext.ts --sweep).
    bm25: { k1: num(env, 'BM25_K1', 1.2), b: num(env, 'BM25_B', 0.75) },
    logLevel: env.LOG_LEVEL || 'info',
    /** `pretty`: one readable line per event; `json`: JSON lines. Unset: pretty on a terminal, JSON otherwise. */
    logFormat: logFormat(env.LOG_FORMAT),
    /** At start, knowledge bases whose type is now served by another model (or chunked otherwise) are re-embedded in the background. */
    reembedOnStart: env.REEMBED_ON_START !== 'false',
    /** /ready lists the cluster's live nodes with their addresses and shards (it needs no key). */
    readyDetails: env.READY_DETAILS === 'true',
    cluster: clusterConfig(env),
  };
}

export type Config = ReturnType<typeof loadConfig>;

function logFormat(value: string | undefined): 'pretty' | 'json' | undefined {
  if (value === undefined || value === '') return undefined;
  if (value === 'pretty' || value === 'json') return value;
  throw new Error(`LOG_FORMAT must be pretty or json; got "${value}"`);
}
