// What the write methods (one file per resource, as Orama's methods/) work on: the state in
// memory, the one way to change it (commit: log, apply, then resolve once durable), and the
// ingestion queue. The Engine façade (engine.ts) owns these and hands them over.
import type { OriginalsStore } from '../files/originals';
import type { KnowledgeBase } from '../kb/knowledge-base';
import type { LogRecord } from '../records';
import type { LiveState } from '../state/live-state';
import { checkQuota, type Quotas } from '../state/quotas';

export interface EngineCore {
  readonly state: LiveState;
  readonly originals: OriginalsStore;
  readonly quotas?: Partial<Quotas>;
  /** Log a record and apply it; resolves with its log sequence number once it is durable and applied. */
  commit(record: LogRecord, attachment?: Uint8Array): Promise<number>;
  /**
   * Queue a content version for chunking and embedding (cluster mode: in the shared job queue,
   * resolved once queued): for the configuration being built (`configId`), or else for the active
   * one and, while another is being built, for that one too.
   */
  enqueue(kbId: string, id: string, version: number, configId?: string): void | Promise<void>;
}

export const now = () => new Date().toISOString();

/** The knowledge base, when it exists and belongs to the organization (others' behave as absent). */
export function kbOf(core: EngineCore, orgId: string, kbId: string): KnowledgeBase | undefined {
  const kb = core.state.kbs.get(kbId);
  return kb && kb.record.orgId === orgId ? kb : undefined;
}

/** Throws QuotaExceededError when the organization already holds `quota`'s limit. */
export function checkOrgQuota(core: EngineCore, orgId: string, quota: keyof Quotas): void {
  checkQuota(core.state.kbs.values(), orgId, quota, core.quotas?.[quota]);
}
