// Per-organization quotas on what the state holds.
import type { KnowledgeBase } from '../kb/knowledge-base';
import { EngineError } from '../errors';

export interface Quotas {
  knowledgeBases: number;
  contents: number;
}

/** A write that would take an organization past one of its quotas. */
export class QuotaExceededError extends EngineError<'QUOTA_EXCEEDED'> {
  constructor(
    readonly quota: keyof Quotas,
    readonly limit: number,
  ) {
    super(
      'QUOTA_EXCEEDED',
      quota === 'knowledgeBases'
        ? `the organization already holds its quota of ${limit} knowledge bases`
        : `the organization already holds its quota of ${limit} content items`,
      { quota, limit },
    );
    this.name = 'QuotaExceededError';
  }
}

/** Throws QuotaExceededError when the organization already holds `limit` (no limit: never); else how many it holds. */
export function checkQuota(kbs: Iterable<KnowledgeBase>, orgId: string, quota: keyof Quotas, limit: number | undefined): number {
  if (limit === undefined) return 0;
  let held = 0;
  // Cluster mode with shards: items of knowledge bases whose content other nodes keep count too.
  for (const kb of kbs) if (kb.record.orgId === orgId) held += quota === 'knowledgeBases' ? 1 : kb.contentCount + kb.itemsElsewhere.size;
  if (held >= limit) throw new QuotaExceededError(quota, limit);
  return held;
}
