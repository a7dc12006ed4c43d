// The server as a function: listen at once (so /health and /ready answer during recovery), replay
// the log, load the embedding models, then serve the API. The process around it (umask, signals,
// exit 1 on a fatal error) is src/start.ts, so tests can run servers inside their own process.
import { toSpec, specKey, ExtractionLanes, LogGapError, type Engine } from '../engine';
import { rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import pkg from '../package.json';
import { createApp, routeTableOf } from './app';
import { verifiedOrg } from './http/auth';
import { UploadService } from './uploads';
import { Metrics } from './http/metrics';
import { RequestActivity, serve } from './http/serve';
import { KeyStore } from './auth/key-store';
import { followKeyLog } from './auth/key-records';
import type { Config } from './config';
import { createLogger, type Logger } from './logger';
import { configForType, fallbackModelDirs, KB_TYPES, modelWarnings, typeEmbeddings, type KbType } from './kb-types';
import { pullConfiguredModels } from './models-at-start';
import {
  coversShards,
  LocalSnapshotStore,
  openEngine,
  restoreFromStore,
  S3ClusterSnapshots,
  S3SnapshotStore,
  SnapshotManager,
  SnapshotRecordsDamaged,
  type SnapshotStore,
} from '../snapshots';
import { join } from 'node:path';

/** Why the server cannot go on (port taken, recovery failed, write-ahead log failed): one line to log. */
export class ServerFatalError extends Error {
  constructor(
    message: string,
    readonly details: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ServerFatalError';
  }
}

export interface CreateServerOptions {
  /** Default: JSON lines on stdout at the configured level. */
  logger?: Logger;
  /**
   * Told of every fatal error, in place of logging it (src/start.ts logs it and exits). Start-up
   * failures also reject createServer or `ready`; a write-ahead log failure later is told here
   * only, and without this option the server logs it and stops.
   */
  onFatal?: (error: ServerFatalError) => void;
}

export interface ServerHandle {
  readonly url: string;
  readonly port: number;
  /** The engine once the log is replayed (undefined before). */
  readonly engine: Engine | undefined;
  /** Resolves once /ready answers 200; rejects (after stopping) when recovery fails. */
  readonly ready: Promise<void>;
  /** Graceful stop: drain requests, snapshot if configured, close everything. Never exits the process. */
  stop(reason?: string): Promise<void>;
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Resolves once the server listens (its port is known); recovery and model loading go on behind `ready`. */
export async function createServer(config: Config, options: CreateServerOptions = {}): Promise<ServerHandle> {
  const logger = options.logger ?? createLogger(config.logLevel, undefined, config.logFormat);
  const fatal = (message: string, details: Record<string, unknown>): ServerFatalError => {
    const error = new ServerFatalError(message, details);
    if (options.onFatal) options.onFatal(error);
    else logger.fatal(details, message);
    return error;
  };

  let engine: Engine | undefined;
  try {
    await pullConfiguredModels(config, logger);
  } catch (err) {
    throw fatal('the configured embedding model could not be pulled', { err: messageOf(err) });
  }
  const embeddings = typeEmbeddings(config);
  const warnings = modelWarnings(embeddings);
  for (const warning of warnings) logger.warn({ modelDir: config.embedding.modelDir }, warning);
  // Each model loads in every worker before the server declares itself ready.
  const bySpec = new Map<string, { spec: ReturnType<typeof toSpec>; types: string[] }>();
  for (const type of KB_TYPES) {
    const spec = toSpec(embeddings[type]);
    const key = specKey(spec);
    const entry = bySpec.get(key) ?? { spec, types: [] };
    entry.types.push(type);
    bySpec.set(key, entry);
  }
  const modelReason = (model: string) => `loading embedding model ${model}`;
  // Every start-up step is a reason up front, so /ready never answers 200 between two steps.
  const notReady = new Set<string>(['recovering state from the write-ahead log', ...[...bySpec.values()].map(({ spec }) => modelReason(spec.model))]);

  const keys = new KeyStore(config.apiKeys);
  // Keys issued by `bun run admin` (on this data directory, or in cluster mode through any node) hold here too.
  const keyStream = await followKeyLog(
    config,
    (record) => keys.add(record),
    (level, message, details) => logger[level]({ ...details, log: 'keys' }, message),
  ).catch((err) => {
    throw fatal(config.cluster ? 'cannot follow the key stream of the cluster' : 'cannot open the key log', { err: messageOf(err) });
  });
  // Text formats and PDF/DOCX/images in lanes of their own, each shared fairly by organizations.
  const extraction = new ExtractionLanes({
    heavyWorkers: config.extraction.workers,
    lightWorkers: config.extraction.textWorkers,
    heavyPerTenant: config.extraction.workersPerOrg,
    timeoutMs: config.extraction.timeoutMs,
    ocrTimeoutMs: config.extraction.ocrTimeoutMs,
    memoryLimitBytes: config.extraction.memoryBytes,
  });
  const uploads = new UploadService(config, extraction);
  let snapshots: SnapshotManager | undefined;
  const metrics = new Metrics(
    () => engine,
    () => snapshots?.status,
  );
  const app = createApp(
    {
      config,
      logger,
      engine: () => (notReady.size === 0 ? engine : undefined),
      notReady: () => [...notReady],
      snapshotStatus: () => snapshots?.status,
      embeddings,
      modelWarnings: warnings,
      metrics,
      version: pkg.version,
    },
    keys,
    uploads,
  );

  const activity = new RequestActivity();
  let server: ReturnType<typeof serve>;
  try {
    // Temporary upload files of a previous run are garbage now.
    await rm(uploads.tmpDir, { recursive: true, force: true });
    server = listen();
  } catch (err) {
    await keyStream?.close();
    await extraction.close();
    throw err;
  }
  logger.info({ port: server.port, host: config.host, dataDir: config.dataDir }, 'listening');

  /** Start listening, or stop the start with one line when the port is taken (or not ours to use). */
  function listen() {
    try {
      return serve((request) => app.handle(request), {
        activity,
        cors: config.cors,
        routes: routeTableOf(app),
        orgOf: verifiedOrg,
        port: config.port,
        hostname: config.host,
        // Bun's own cap is only a backstop, far above the routes' limits, so that oversized bodies reach
        // the app and get its JSON 413 (src/app.ts checks Content-Length, src/http/* count while reading).
        maxRequestBodySize: 4 * Math.max(config.limits.maxFileBytes, config.limits.maxJsonBodyBytes) + 64 * 1024 * 1024,
        logger,
        observe: (method, route, status, seconds) => metrics.observeRequest(method, route, status, seconds),
        idleTimeoutSeconds: config.idleTimeoutSeconds,
        // An upload is received, extracted, then maybe waited for: each phase answers on its own time limit
        // before this one (Bun's at most 255 s) cuts the connection.
        longRequestSeconds: Math.ceil((config.limits.uploadReceiveMs + config.extraction.timeoutMs + config.waitTimeoutMs) / 1000) + 15,
      });
    } catch (err) {
      const code = (err as { code?: string }).code;
      const why =
        code === 'EADDRINUSE' ? `port ${config.port} on ${config.host} is already in use (is another server running?); stop it or set PORT` : messageOf(err);
      throw fatal(`cannot listen: ${why}`, { port: config.port, host: config.host, code });
    }
  }

  /** Replay the log (from a snapshot), load the models, then let ingestion run: /ready answers 200 after. */
  async function startUp(): Promise<void> {
    const snapshotsDir = join(config.dataDir, 'snapshots');
    // Cluster mode: each node uploads to its own folder of the bucket; a new node starts from the
    // newest snapshot of any node (then follows the shared log after it).
    const store: SnapshotStore = !config.s3
      ? new LocalSnapshotStore(snapshotsDir)
      : config.cluster
        ? S3ClusterSnapshots.ofNode(config.s3, config.cluster.nodeId)
        : new S3SnapshotStore(config.s3);
    const clusterSnapshots = config.s3 && config.cluster ? new S3ClusterSnapshots(config.s3) : undefined;
    const restoreSource: SnapshotStore = clusterSnapshots ?? store;
    // Cluster mode with shards: only a snapshot holding this node's shards is a place to start from.
    const covers = coversShards(config.cluster?.shards);
    try {
      if (store instanceof S3SnapshotStore) {
        // A new machine starts from the newest snapshot in the bucket (then its own, empty, log).
        await store.ensureBucket().catch((err) => logger.warn({ store: store.name, err: String(err) }, 'snapshot store unreachable'));
        await restoreFromStore(restoreSource, snapshotsDir, logger, { covers }).catch((err) =>
          logger.error({ store: store.name, err: String(err) }, 'could not restore from the snapshot store'),
        );
      }
      const engineOptions: Parameters<typeof openEngine>[0] = {
        dataDir: config.dataDir,
        compute: {
          documentWorkers: config.ingestWorkers,
          queryWorkers: config.queryWorkers,
          batchSize: config.embedding.batchSize,
          batchChars: config.embedding.batchChars,
          batchTokens: config.embedding.batchTokens,
          queryCacheSize: config.embedding.queryCacheSize,
          settings: {
            modelDir: config.embedding.modelDir,
            // …then the shipped model's folder (beside the code; unpacked from the binary).
            fallbackModelDirs: fallbackModelDirs(config),
            // Models load from these folders only (pulled into EMBEDDING_MODEL_DIR at start when
            // allowed): the loader never reaches for the hub itself.
            allowRemoteModels: false,
            threads: config.embedding.threads,
            http: config.embedding.http.url ? config.embedding.http : undefined,
          },
        },
        walSegmentBytes: config.walSegmentBytes,
        cluster: config.cluster && {
          ...config.cluster,
          purge: clusterSnapshots !== undefined,
          advertiseUrl: config.cluster.advertiseUrl ?? advertisedUrl(config.host, server.port),
          purgeFloor: clusterSnapshots && (async () => (await clusterSnapshots.purgeFloor()) ?? 0),
        },
        log: (level, message, details) => logger[level](details ?? {}, message),
        onFatal: (err) => {
          fatal('write-ahead log failed; exiting so a restart can recover from the log', { err: String(err) });
          if (!options.onFatal) void stop('write-ahead log failed');
        },
        idle: () => activity.idle(),
        onBatch: ({ model, chunks, millis }) => metrics.observeBatch(model, chunks, millis / 1000),
        // Content re-queued by the replay waits until the models are loaded (startIngestion below).
        holdIngestion: true,
        embeddingRetry: config.embeddingRetry,
        quotas: {
          ...(config.quotas.knowledgeBases > 0 ? { knowledgeBases: config.quotas.knowledgeBases } : {}),
          ...(config.quotas.contents > 0 ? { contents: config.quotas.contents } : {}),
        },
      };
      let opened: Awaited<ReturnType<typeof openEngine>>;
      try {
        opened = await openEngine(engineOptions);
      } catch (err) {
        // Cluster mode: the stream was purged past this node's own snapshot (it was down a long time):
        // start from the newest snapshot any node put in the store instead.
        if (!(err instanceof LogGapError) || !config.s3) throw err;
        logger.warn({ err: err.message }, "the log no longer holds what follows this node's snapshot; starting from the newest snapshot in the store");
        if ((await restoreFromStore(restoreSource, snapshotsDir, logger, { evenOverLocal: true, covers })) === undefined) throw err;
        opened = await openEngine(engineOptions);
      }
      engine = opened.engine;
      // Started from a snapshot's dumps, its record files are checked from now on: damaged, no
      // snapshot can be built on them, so the server exits and its restart opens from the one before.
      opened.snapshots.recordsChecked.catch((err) => {
        if (!(err instanceof SnapshotRecordsDamaged)) return;
        fatal('snapshot records damaged; exiting so that a restart opens from the snapshot before it and the log', {
          snapshot: err.snapshot,
          setAsideAt: err.setAsideAt,
          err: err.message,
        });
        if (!options.onFatal) void stop('snapshot records damaged');
      });
      notReady.delete('recovering state from the write-ahead log');
      snapshots = new SnapshotManager(engine, opened.snapshots, store, config.snapshots, logger);
      await snapshots.start();
      // Replay leaves hundreds of MB of decoded records behind: collect them now, not at the first
      // allocation under load (RSS at ready was ~1.5× the steady state).
      Bun.gc(true);
      logger.info({ recovery: engine.recovery }, 'state recovered');
    } catch (err) {
      throw fatal('recovery failed', { err: messageOf(err) });
    }
    const recovered = engine;

    await Promise.all(
      [...bySpec.values()].map(async ({ spec, types }) => {
        const reason = modelReason(spec.model);
        try {
          const millis = await recovered.preloadModel(spec);
          logger.info(
            {
              model: spec.model,
              provider: spec.provider,
              dimensions: spec.dimensions,
              types,
              quantization: types.map((t) => embeddings[t as keyof typeof embeddings].quantization),
              loadMillis: millis,
            },
            'embedding model serves types',
          );
        } catch (err) {
          // The server still serves full-text search; semantic requests answer 502 until the model loads.
          logger.error({ model: spec.model, types, err: messageOf(err) }, 'embedding model failed to load');
        } finally {
          notReady.delete(reason);
        }
      }),
    );
    // Every worker has loaded its models: re-queued content goes to them now (a model that failed to
    // load fails or retries those items, as it would for new ones).
    recovered.startIngestion();
    // Knowledge bases whose type is now served by another model (or chunked otherwise) are rebuilt for it in
    // the background, answering from their old configuration until complete (engine/methods/reembed.ts).
    if (config.reembedOnStart) {
      const started = await recovered.reembedChanged((kb) => configForType(kb.type as KbType, config, embeddings));
      if (started.length > 0) logger.info({ knowledgeBases: started }, 're-embedding knowledge bases for the models now serving their types');
    }
    logger.info({ requeued: recovered.recovery.requeued }, 'ready');
  }

  let stopped: Promise<void> | undefined;
  /** Stop accepting, let in-flight requests finish (bounded), snapshot if configured, close everything. */
  function stop(reason = 'stop'): Promise<void> {
    stopped ??= (async () => {
      notReady.add('shutting down');
      logger.info({ signal: reason }, 'shutting down: draining in-flight requests');
      const drainStarted = performance.now();
      const drained = await Promise.race([server.stop().then(() => true), Bun.sleep(config.shutdownDrainMs).then(() => false)]);
      if (!drained) {
        logger.warn({ drainMs: config.shutdownDrainMs }, 'requests still running after the drain period; closing them');
        await server.stop(true);
      } else logger.info({ ms: Math.round(performance.now() - drainStarted) }, 'in-flight requests done');
      // A start-up step still running (replay, model loading) finishes before what it uses is closed.
      await starting.catch(() => {});
      if (config.snapshots.onShutdown) await snapshots?.shutdown(30_000);
      else await snapshots?.stop();
      await engine?.close();
      await keyStream?.close();
      await extraction.close();
      logger.info({}, 'stopped');
    })();
    return stopped;
  }

  const starting = startUp();
  const ready = starting.catch(async (err) => {
    await stop('start-up failed');
    throw err;
  });
  // The failure is logged (or told to onFatal) already: a caller that never awaits `ready` is no
  // unhandled rejection.
  ready.catch(() => {});

  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${server.port}`;
  return {
    url,
    port: server.port!,
    get engine() {
      return engine;
    },
    ready,
    stop,
  };
}

/** Where other nodes reach this one by default: the address it listens on, or the machine's name. */
function advertisedUrl(host: string, port: number | undefined): string {
  const name = host === '0.0.0.0' || host === '::' || host === '' ? hostname() : host;
  return `http://${name.includes(':') ? `[${name}]` : name}:${port}`;
}
