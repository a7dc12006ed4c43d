// The parts an engine is made of (engine.ts), made before its node: the node works on them, and
// they call back into the engine only once it is open (never while the log is replayed).
import { join } from 'node:path';
import { OriginalsStore } from './files/originals';
import { Compute } from './ingest/compute';
import { IngestionQueue } from './ingest/queue';
import type { LogRecord } from './records';
import { ShardSet } from './shards';
import { LiveState } from './state/live-state';
import { TextStore } from './text/text-store';
import { GraphBuilder } from './vector/graph-builder';
import { GraphSearcher } from './vector/graph-searcher';
import type { EngineLog, EngineOptions } from './options';

export interface EngineParts {
  say: EngineLog;
  originals: OriginalsStore;
  shards: ShardSet;
  state: LiveState;
  pacer: GraphBuilder;
  /** Graph searches off the request thread, for searches with other work to do meanwhile (hybrid). */
  searcher: GraphSearcher;
  compute: Compute;
  ingestion: IngestionQueue;
  /** Item texts out of the heap, rebuilt by every open from the log (text/text-store.ts). */
  texts: TextStore;
}

/** What the parts ask of the open engine. */
export interface EngineHooks {
  /** Log and apply an indexing result. */
  commit(record: LogRecord, attachment?: Uint8Array): Promise<number>;
  /** A configuration being built may be complete. */
  built(kbId: string): void;
  /** Vectors were added: the background graph build may have work. */
  vectorsAdded(): void;
  /** Chunks joined a knowledge base's active index: its items may be grouped in the background. */
  indexed(kbId: string): void;
}

export function assembleParts(options: EngineOptions, hooks: EngineHooks): EngineParts {
  const say: EngineLog = options.log ?? ((l, m, d) => console[l](m, d ?? ''));
  const originals = new OriginalsStore(join(options.dataDir, 'files'));
  const shards = options.cluster?.shards ?? ShardSet.all();
  const texts = new TextStore(join(options.dataDir, 'text'));
  const state: LiveState = new LiveState({
    originals,
    graphThreshold: options.graphThreshold,
    discard: (task) => task.catch((err) => say('warn', 'could not remove stored files', { error: String(err) })),
    onVectorsAdded: hooks.vectorsAdded,
    onIndexed: hooks.indexed,
    holds: shards.holdsAll ? undefined : (kbId) => shards.holds(kbId),
    vectorDir: join(options.dataDir, 'vectors'),
    texts,
  });
  const compute = new Compute({ documentWorkers: 1, ...options.compute });
  const ingestion = new IngestionQueue({
    knowledgeBases: state.kbs,
    compute,
    commit: hooks.commit,
    batchItems: options.batchItems,
    embeddingRetry: options.embeddingRetry,
    onBatch: options.onBatch,
    onBuilt: hooks.built,
    log: say,
    held: true,
  });
  // Idle only while no content waits for indexing either: the graph worker then inserts on every
  // core, and the main-thread fallback at its idle pace (20 ms of every 25) held back the commits of
  // a bulk load's results.
  const idle = options.idle;
  const pacer = new GraphBuilder(() => state.kbs.values(), idle && (() => idle() && ingestion.depth === 0), { log: say });
  const searcher = new GraphSearcher({ log: say, minVectors: options.searcherMinVectors });
  return { say, originals, shards, state, pacer, searcher, compute, ingestion, texts };
}
