// Content items: add (text or an uploaded file's text), update, delete, re-index failed ones.
// Each logs its record and queues the version for indexing; reads go straight to the state.
import type { Metadata } from '../filter/metadata';
import { isIdOf, newId } from '../ids';
import type { ContentItem } from '../kb/knowledge-base';
import type { NewContent } from '../options';
import type { ContentSource } from '../records';
import { checkOrgQuota, kbOf, now, type EngineCore } from './core';
import { activateIfBuilt } from './reembed';

export async function addContent(core: EngineCore, orgId: string, kbId: string, input: NewContent): Promise<ContentItem | undefined> {
  const kb = kbOf(core, orgId, kbId);
  if (!kb) return undefined;
  if (input.id !== undefined && (!isIdOf('ct', input.id) || kb.contents.has(input.id))) throw new Error(`invalid or reused content id ${input.id}`);
  checkOrgQuota(core, orgId, 'contents');
  const id = input.id ?? newId('ct');
  await core.commit({ t: 'content.put', kbId, id, version: 1, text: input.text, metadata: input.metadata ?? {}, source: input.source ?? { kind: 'text' }, pages: input.pages, at: now() });
  await core.enqueue(kbId, id, 1);
  return core.state.kbs.get(kbId)?.contents.get(id);
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
): Promise<ContentItem | undefined> {
  if (!kbOf(core, orgId, kbId)) return undefined;
  const id = newId('ct');
  await core.originals.adopt(filePath, kbId, id);
  const item = await addContent(core, orgId, kbId, { ...input, id }).catch(async (err) => {
    await core.originals.remove(kbId, id);
    throw err;
  });
  if (!item) await core.originals.remove(kbId, id); // deleted while the file was being stored
  return item;
}

/** Replace the text (and the metadata, when given). Undefined when the item does not exist. */
export async function updateContent(
  core: EngineCore,
  orgId: string,
  kbId: string,
  contentId: string,
  input: { text: string; metadata?: Metadata; source?: ContentSource; pages?: number[] },
): Promise<ContentItem | undefined> {
  const item = kbOf(core, orgId, kbId)?.contents.get(contentId);
  if (!item) return undefined;
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

export async function deleteContent(core: EngineCore, orgId: string, kbId: string, contentId: string): Promise<boolean> {
  if (!kbOf(core, orgId, kbId)?.contents.has(contentId)) return false;
  await core.commit({ t: 'content.delete', kbId, id: contentId });
  // The last item a build was waiting for may be gone.
  await activateIfBuilt(core, kbId);
  return true;
}

/** Index a failed item again (its newest version); undefined when there is no such item. */
export async function reindexContent(core: EngineCore, orgId: string, kbId: string, contentId: string): Promise<ContentItem | undefined> {
  const item = kbOf(core, orgId, kbId)?.contents.get(contentId);
  if (!item) return undefined;
  if (item.status === 'failed') await retryFailed(core, item);
  return item;
}

/** Index every failed item of a knowledge base again; the number queued, undefined when no such knowledge base. */
export async function reindexFailed(core: EngineCore, orgId: string, kbId: string): Promise<number | undefined> {
  const kb = kbOf(core, orgId, kbId);
  if (!kb) return undefined;
  const failed = [...kb.contents.values()].filter((item) => item.status === 'failed');
  await Promise.all(failed.map((item) => retryFailed(core, item)));
  return failed.length;
}

async function retryFailed(core: EngineCore, item: ContentItem): Promise<void> {
  const version = item.current.version;
  await core.commit({ t: 'content.retry', kbId: item.kbId, id: item.id, version, at: now() });
  if (item.status === 'pending' && item.current.version === version) await core.enqueue(item.kbId, item.id, version);
}
