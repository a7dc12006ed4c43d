// Every change of a content item's status, in one place (each through its knowledge base, which
// counts items by status):
//   pending ──(sent to a worker)──▶ processing ──(indexed)──▶ ready
//      ▲                                 │  └──(unreadable, or embedding kept failing)──▶ failed
//      └──(new version, re-index of a failed item, embedding retry, restart)──┘
import type { ContentItem, KnowledgeBase } from '../kb/knowledge-base';

/** Waiting for (another) indexing run: a new version, a retry, or a restart while processing. */
export function markPending(kb: KnowledgeBase, item: ContentItem): void {
  kb.setStatus(item, 'pending');
}

export function markProcessing(kb: KnowledgeBase, item: ContentItem): void {
  kb.setStatus(item, 'processing', item.error);
}

export function markReady(kb: KnowledgeBase, item: ContentItem): void {
  kb.setStatus(item, 'ready');
}

export function markFailed(kb: KnowledgeBase, item: ContentItem, error: string): void {
  kb.setStatus(item, 'failed', error);
}

/** Whether the item's newest version has an outcome (what `?wait=true` waits for). */
export function isSettled(item: ContentItem): boolean {
  return item.status === 'ready' || item.status === 'failed';
}
