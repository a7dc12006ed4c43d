// Re-embedding: a knowledge base moves to another configuration (the model serving its type
// changed) without downtime. The new configuration is logged (kb.reconfigure) and built beside the
// active one from every item, in the background; writes meanwhile are indexed for both; searches
// keep answering from the active configuration until every item is built, when kb.activate swaps
// the two at once. A build survives restarts (its results are logged; what is missing is queued
// again at start-up) and runs once in a cluster (its jobs go to the shared queue).
import { newId } from '../ids';
import { indexesAlike, type KnowledgeBaseConfig, type KnowledgeBaseRecord } from '../records';
import { heldKbOf, now, type EngineCore } from './core';

/** What asking for a configuration did. */
export type ReembedStart =
  /** A build of it began. */
  | 'started'
  /** It was being built already. */
  | 'running'
  /** The knowledge base indexes that way already (a build of another configuration, if any, was cancelled). */
  | 'current';

export interface ReembedProgress {
  /** The configuration being built (active once complete). */
  configurationId: string;
  model: string;
  /** Items whose newest version is built, of all items. */
  done: number;
  total: number;
  /** Chunks built per second over the last minute. */
  chunksPerSecond: number;
  /** Seconds until complete at that pace; null before there is a pace. */
  etaSeconds: number | null;
  startedAt: string;
}

/** Start building `config` for the knowledge base, unless it indexes that way already or is being built so. */
export async function reembed(core: EngineCore, orgId: string, kbId: string, config: Omit<KnowledgeBaseConfig, 'id' | 'createdAt'>): Promise<ReembedStart> {
  const kb = heldKbOf(core, orgId, kbId);
  if (indexesAlike(config, kb.record.config)) {
    // Back to the active configuration: a build of another one is dropped (the machine's rule).
    if (kb.building) await core.commit({ t: 'kb.reconfigure', kbId, config: { ...config, id: newId('cfg'), createdAt: now() }, at: now() });
    return 'current';
  }
  if (kb.building && indexesAlike(config, kb.building)) return 'running';
  const at = now();
  const next: KnowledgeBaseConfig = { ...config, id: newId('cfg'), createdAt: at };
  await core.commit({ t: 'kb.reconfigure', kbId, config: next, at });
  // Cluster mode: another node asked for the same build first (at start-up every node asks); its
  // jobs are queued by that node (and found by the sweep if it died before queuing them all).
  if (core.state.kbs.get(kbId)?.building?.id !== next.id) return 'running';
  for (const item of kb.contents.values()) await core.enqueue(kbId, item.id, item.current.version, next.id);
  // Nothing to build (no items): complete at once.
  await activateIfBuilt(core, kbId);
  return 'started';
}

/** Every knowledge base held here that indexes otherwise than `wanted` says starts a build of that; the ids of those started. */
export async function reembedChanged(core: EngineCore, wanted: (kb: KnowledgeBaseRecord) => Omit<KnowledgeBaseConfig, 'id' | 'createdAt'>): Promise<string[]> {
  const started: string[] = [];
  for (const kb of [...core.state.kbs.values()]) {
    if (core.shards.holds(kb.id) && (await reembed(core, kb.record.orgId, kb.id, wanted(kb.record))) === 'started') started.push(kb.id);
  }
  return started;
}

/** Activate the configuration being built once every item's newest version has an outcome in it. */
export async function activateIfBuilt(core: EngineCore, kbId: string): Promise<boolean> {
  const kb = core.state.kbs.get(kbId);
  const building = kb?.building;
  const progress = kb?.buildProgress();
  if (!building || !progress || progress.done < progress.total) return false;
  // Two results finishing at once may both get here: the second activation is a no-op (the machine's rule).
  await core.commit({ t: 'kb.activate', kbId, configId: building.id, at: now() });
  return true;
}

/** Where the knowledge base's build stands; undefined when none is under way. */
export function reembedProgress(core: EngineCore, kbId: string, chunksPerSecond: number): ReembedProgress | undefined {
  const kb = core.state.kbs.get(kbId);
  const building = kb?.building;
  const progress = kb?.buildProgress();
  if (!kb || !building || !progress) return undefined;
  const { done, total, chunksLeft } = progress;
  return {
    configurationId: building.id,
    model: building.embedding.model,
    done,
    total,
    chunksPerSecond,
    etaSeconds: chunksLeft === 0 ? 0 : chunksPerSecond > 0 ? Math.ceil(chunksLeft / chunksPerSecond) : null,
    startedAt: building.createdAt,
  };
}
