// What the write methods (one file per resource, as Orama's methods/) work on: the state in
// memory, the one way to change it (commit: log, apply, then resolve once durable), and the
// ingestion queue. The Engine façade (engine.ts) owns these and hands them over.
import type { OriginalsStore } from '../files/originals';
import { contentNotFound, EngineError, knowledgeBaseNotFound } from '../errors';
import type { ContentItem, KnowledgeBase } from '../kb/knowledge-base';
import type { LogRecord } from '../records';
import type { Route } from '../node/node';
import type { ShardSet } from '../shards';
import type { LiveState } from '../state/live-state';
import { checkQuota, type Quotas } from '../state/quotas';
import type { GraphSearcher } from '../vector/graph-searcher';

export interface EngineCore {
  readonly state: LiveState;
  readonly originals: OriginalsStore;
  readonly quotas?: Partial<Quotas>;
  /** The knowledge bases whose content this node holds (all on a single node). */
  readonly shards: ShardSet;
  /** Graph searches on a thread of their own (hybrid search's semantic leg). */
  readonly searcher: GraphSearcher;
  /** Where requests about a knowledge base are answered (the live nodes holding its shard). */
  routeOf(kbId: string): Route;
  /**
   * Log a record and apply it; resolves with its log sequence number once it is durable and
   * applied. `check` (a quota) throws at its limit; near it, the append is conditional on the
   * state the check saw: exact under concurrency on one node or many (node/commit.ts).
   */
  commit(record: LogRecord, attachment?: Uint8Array, check?: () => boolean): Promise<number>;
  /**
   * Queue a content version for chunking and embedding (cluster mode: in the shared job queue,
   * resolved once queued): for the configuration being built (`configId`), or else for the active
   * one and, while another is being built, for that one too.
   */
  enqueue(kbId: string, id: string, version: number, configId?: string): void | Promise<void>;
}

export const now = () => new Date().toISOString();

/** The knowledge base, when it exists and belongs to the organization (another's behaves as absent); else KNOWLEDGE_BASE_NOT_FOUND. */
export function kbOf(core: EngineCore, orgId: string, kbId: string): KnowledgeBase {
  const kb = core.state.kbs.get(kbId);
  if (!kb || kb.record.orgId !== orgId) throw knowledgeBaseNotFound(kbId);
  return kb;
}

/**
 * The knowledge base whose content this node holds: what every read, write and search of its
 * content goes through, so that no node answers for content it does not keep (SHARD_NOT_HELD;
 * the server sends such requests to a node that holds it).
 */
export function heldKbOf(core: EngineCore, orgId: string, kbId: string): KnowledgeBase {
  const kb = kbOf(core, orgId, kbId);
  const route = core.routeOf(kbId);
  if (!route.here)
    throw new EngineError('SHARD_NOT_HELD', "This node does not hold the knowledge base's content", { kbId, shard: route.shard, nodes: route.nodes });
  return kb;
}

/** The content item of a knowledge base held here; else CONTENT_NOT_FOUND (or as heldKbOf). */
export function contentOf(core: EngineCore, orgId: string, kbId: string, contentId: string): ContentItem {
  const item = heldKbOf(core, orgId, kbId).contents.get(contentId);
  if (!item) throw contentNotFound(kbId, contentId);
  return item;
}

/** Throws QuotaExceededError when the organization already holds `quota`'s limit. */
export function checkOrgQuota(core: EngineCore, orgId: string, quota: keyof Quotas): void {
  checkQuota(core.state.kbs.values(), orgId, quota, core.quotas?.[quota]);
}

/**
 * The quota check a write passes to commit: it throws at the limit, and says whether the write is
 * near enough to it that the append must be conditional (Engine.commit): within a tenth of the
 * limit (at least 64). Further below, concurrent writes cannot pass the limit unless that many of
 * the organization's were logged and not yet applied here, and unconditional appends keep writers
 * on several nodes from retrying one another. None when the organization has no such quota.
 */
export function quotaCheck(core: EngineCore, orgId: string, quota: keyof Quotas): (() => boolean) | undefined {
  const limit = core.quotas?.[quota];
  if (limit === undefined) return undefined;
  const margin = Math.max(64, Math.ceil(limit / 10));
  return () => checkQuota(core.state.kbs.values(), orgId, quota, limit) + margin >= limit;
}
