// Every change of a content item's status, in one place:
//   pending ──(sent to a worker)──▶ processing ──(indexed)──▶ ready
//      ▲                                 │  └──(unreadable, or embedding kept failing)──▶ failed
//      └──(new version, re-index of a failed item, embedding retry, restart)──┘
import type { ContentItem } from '../kb/knowledge-base';

/** Waiting for (another) indexing run: a new version, a retry, or a restart while processing. */
export function markPending(item: ContentItem): void {
  item.status = 'pending';
  item.error = undefined;
}

export function markProcessing(item: ContentItem): void {
  item.status = 'processing';
}

export function markReady(item: ContentItem): void {
  item.status = 'ready';
  item.error = undefined;
}

export function markFailed(item: ContentItem, error: string): void {
  item.status = 'failed';
  item.error = error;
}

/** Whether the item's newest version has an outcome (what `?wait=true` waits for). */
export function isSettled(item: ContentItem): boolean {
  return item.status === 'ready' || item.status === 'failed';
}
