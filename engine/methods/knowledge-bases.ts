// Knowledge bases: list, read, create, rename, delete.
import { newId } from '../ids';
import type { KnowledgeBaseConfig, KnowledgeBaseRecord } from '../records';
import { kbOf, now, quotaCheck, type EngineCore } from './core';

export function listKnowledgeBases(core: EngineCore, orgId: string): KnowledgeBaseRecord[] {
  return [...core.state.kbs.values()]
    .map((kb) => kb.record)
    .filter((r) => r.orgId === orgId)
    .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
}

export async function createKnowledgeBase(
  core: EngineCore,
  orgId: string,
  input: { name: string; description: string; type: string; config: Omit<KnowledgeBaseConfig, 'id' | 'createdAt'> },
): Promise<KnowledgeBaseRecord> {
  const at = now();
  const kb: KnowledgeBaseRecord = {
    id: newId('kb'),
    orgId,
    name: input.name,
    description: input.description,
    type: input.type,
    config: { ...input.config, id: newId('cfg'), createdAt: at },
    createdAt: at,
    updatedAt: at,
  };
  // Checked against the state the append is conditional on: exact under concurrency (Engine.commit).
  await core.commit({ t: 'kb.create', kb }, undefined, quotaCheck(core, orgId, 'knowledgeBases'));
  return kb;
}

export async function updateKnowledgeBase(
  core: EngineCore,
  orgId: string,
  kbId: string,
  change: { name: string; description?: string },
): Promise<KnowledgeBaseRecord> {
  const kb = kbOf(core, orgId, kbId);
  await core.commit({ t: 'kb.update', id: kbId, name: change.name, description: change.description ?? kb.record.description, at: now() });
  return kbOf(core, orgId, kbId).record;
}

export async function deleteKnowledgeBase(core: EngineCore, orgId: string, kbId: string): Promise<void> {
  kbOf(core, orgId, kbId);
  await core.commit({ t: 'kb.delete', id: kbId });
}
