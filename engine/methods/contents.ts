// Content items: add (text or an uploaded file's text), update, delete, re-index failed ones.
// Each logs its record and queues the version for indexing; reads go straight to the state.
// Only a node holding the knowledge base's content takes them (heldKbOf: SHARD_NOT_HELD).
import { EngineError } from '../errors';
import type { Metadata } from '../filter/metadata';
import { isIdOf, newId } from '../ids';
import type { ContentItem } from '../kb/knowledge-base';
import type { NewContent } from '../options';
import type { ContentSource } from '../records';
import { contentOf, heldKbOf, now, quotaCheck, type EngineCore } from './core';
import { activateIfBuilt } from './reembed';

export async function addContent(core: EngineCore, orgId: string, kbId: string, input: NewContent): Promise<ContentItem> {
  const kb = heldKbOf(core, orgId, kbId);
  if (input.id !== undefined && (!isIdOf('ct', input.id) || kb.contents.has(input.id))) {
    throw new EngineError('CONTENT_ID_TAKEN', `The content id ${input.id} is malformed or already used`, { kbId, contentId: input.id });
  }
  const id = input.id ?? newId('ct');
  // Checked against the state the append is conditional on: exact under concurrency (Engine.commit).
  await core.commit(
    {
      t: 'content.put',
      kbId,
      id,
      version: 1,
      text: input.text,
      metadata: input.metadata ?? {},
      source: input.source ?? { kind: 'text' },
      pages: input.pages,
      at: now(),
    },
    undefined,
    quotaCheck(core, orgId, 'contents'),
  );
  await core.enqueue(kbId, id, 1);
  // Deleted (or its knowledge base) while the record was being made durable.
  return contentOf(core, orgId, kbId, id);
}

/**
 * Add the text extracted from an uploaded file, keeping the file (moved from `filePath`) as the
 * item's original: durable under the item's id before the item is logged.
 */
export async function addFileContent(
  core: EngineCore,
  orgId: string,
  kbId: string,
  filePath: string,
  input: Omit<NewContent, 'id'> & { source: Extract<ContentSource, { kind: 'file' }> },
): Promise<ContentItem> {
  heldKbOf(core, orgId, kbId);
  const id = newId('ct');
  await core.originals.adopt(filePath, kbId, id);
  return addContent(core, orgId, kbId, { ...input, id }).catch(async (err) => {
    // Not logged, or deleted while the file was being stored: the kept file goes too.
    await core.originals.remove(kbId, id);
    throw err;
  });
}

/** Replace the text (and the metadata, when given). */
export async function updateContent(
  core: EngineCore,
  orgId: string,
  kbId: string,
  contentId: string,
  input: { text: string; metadata?: Metadata; source?: ContentSource; pages?: number[] },
): Promise<ContentItem> {
  const item = contentOf(core, orgId, kbId, contentId);
  const version = item.current.version + 1;
  await core.commit({
    t: 'content.put',
    kbId,
    id: contentId,
    version,
    text: input.text,
    metadata: input.metadata ?? item.current.metadata,
    source: input.source ?? item.current.source,
    pages: input.source ? input.pages : item.current.pages,
    createdAt: item.createdAt,
    at: now(),
  });
  await core.enqueue(kbId, contentId, version);
  return item;
}

export async function deleteContent(core: EngineCore, orgId: string, kbId: string, contentId: string): Promise<void> {
  contentOf(core, orgId, kbId, contentId);
  await core.commit({ t: 'content.delete', kbId, id: contentId });
  // The last item a build was waiting for may be gone.
  await activateIfBuilt(core, kbId);
}

/** Index a failed item again (its newest version). */
export async function reindexContent(core: EngineCore, orgId: string, kbId: string, contentId: string): Promise<ContentItem> {
  const item = contentOf(core, orgId, kbId, contentId);
  if (item.status === 'failed') await retryFailed(core, item);
  return item;
}

/** Index every failed item of a knowledge base again; the number queued. */
export async function reindexFailed(core: EngineCore, orgId: string, kbId: string): Promise<number> {
  const failed = [...heldKbOf(core, orgId, kbId).contents.values()].filter((item) => item.status === 'failed');
  await Promise.all(failed.map((item) => retryFailed(core, item)));
  return failed.length;
}

async function retryFailed(core: EngineCore, item: ContentItem): Promise<void> {
  const version = item.current.version;
  await core.commit({ t: 'content.retry', kbId: item.kbId, id: item.id, version, at: now() });
  if (item.status === 'pending' && item.current.version === version) await core.enqueue(item.kbId, item.id, version);
}
