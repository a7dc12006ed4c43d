// Bulk import: many text items of one knowledge base in one call (POST …/contents/import, JSONL).
// All or nothing as far as the caller can tell: the quota is checked for the whole batch before
// anything is logged, then every item's record is logged back to back in one synchronous run, so
// the write-ahead log's group commit makes the whole batch durable with one write and one fsync
// (log/segment-log.ts), and the call resolves only once every record is durable and applied. The
// items are queued for indexing together: the ingestion queue then fills full worker batches.
import type { Metadata } from '../filter/metadata';
import { newId } from '../ids';
import { checkQuota, QuotaExceededError } from '../state/quotas';
import { heldKbOf, now, quotaCheck, type EngineCore } from './core';

export interface ImportItem {
  text: string;
  metadata?: Metadata;
}

/** Throws QuotaExceededError unless the organization can take `count` more items. */
export function checkImportQuota(core: EngineCore, orgId: string, count: number): void {
  const limit = core.quotas?.contents;
  if (limit === undefined) return;
  const held = checkQuota(core.state.kbs.values(), orgId, 'contents', limit);
  if (held + count > limit) {
    const err = new QuotaExceededError('contents', limit);
    err.message = `${err.message}: ${held} held, ${count} more would pass it`;
    throw err;
  }
}

/** Log every item (one durable batch) and queue them for indexing; their ids, in input order. */
export async function importContents(core: EngineCore, orgId: string, kbId: string, items: readonly ImportItem[]): Promise<string[]> {
  heldKbOf(core, orgId, kbId);
  if (items.length === 0) return [];
  checkImportQuota(core, orgId, items.length);
  // Each record also carries the single write's check: in cluster mode, near the limit, an append
  // is conditional on the state it was checked against (node/commit.ts), as for single writes.
  const check = quotaCheck(core, orgId, 'contents');
  const at = now();
  const ids = items.map(() => newId('ct'));
  // No await between the appends: on one node each is logged and applied synchronously, so nothing
  // else interleaves (the quota check above stays exact) and the log writes them as one batch.
  const commits = items.map((item, i) =>
    core.commit(
      {
        t: 'content.put',
        kbId,
        id: ids[i]!,
        version: 1,
        text: item.text,
        metadata: item.metadata ?? {},
        source: { kind: 'text' },
        at,
      },
      undefined,
      check,
    ),
  );
  await Promise.all(commits);
  await Promise.all(ids.map((id) => core.enqueue(kbId, id, 1)));
  return ids;
}
