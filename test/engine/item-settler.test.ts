// Items are grouped for BM25 (search/items.ts) in the background after they are indexed, and after a
// restart that replayed them, so that no search pays for a bulk load's worth at once.
import { afterEach, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import type { Engine } from '../../engine';
import { openEngine } from '../../snapshots';
import { NO_EMBEDDING, textKbConfig } from '../helpers/kb-config';
import { TestServer } from '../helpers/server';

const ORG = 'org_settle';
const CONFIG = textKbConfig(NO_EMBEDDING, { chunking: { size: 120, overlap: 30 } });
const dirs: string[] = [];
const engines: Engine[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) await e.close().catch(() => {});
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function open(dataDir: string) {
  const { engine } = await openEngine({ dataDir, compute: { documentWorkers: 1 }, log: () => {} });
  engines.push(engine);
  return engine;
}

/** Until `check` holds (polling), or fail after `ms`. */
async function until(check: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('not settled in time');
    await Bun.sleep(25);
  }
}

const text = (i: number) =>
  `Item ${i} talks about solar roofs and heat pumps. ${'It keeps talking about insulation, windows and the grid. '.repeat(1 + (i % 4))}Last words of item ${i}.`;

describe('background grouping of items', () => {
  test('indexed items are grouped without a search; a restart replaying them groups them too; answers are the same', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const kb = await a.createKnowledgeBase(ORG, { name: 's', description: '', type: 'TEXT_HIGH_QUALITY', config: CONFIG });
    for (let i = 0; i < 60; i++) await a.addContent(ORG, kb.id, { text: text(i) });
    while (a.stats().queueDepth > 0) await Bun.sleep(20);
    const index = () => a.knowledgeBase(kb.id)!.bm25;
    expect(a.knowledgeBase(kb.id)!.chunkCount).toBeGreaterThan(60);
    // No search has run: the settler grouped them.
    await until(() => index().unsettled().length === 0);
    expect(index().groupCount).toBe(60);
    const answers = JSON.stringify(a.searchFullText(ORG, kb.id, { query: 'solar insulation grid', limit: 10 }));
    await a.close();
    // No snapshot was taken: the restart replays the log, and the settler groups what it replayed.
    const b = await open(dir);
    expect(b.recovery.records).toBeGreaterThan(0);
    await until(() => b.knowledgeBase(kb.id)!.bm25.unsettled().length === 0);
    expect(b.knowledgeBase(kb.id)!.bm25.groupCount).toBe(60);
    expect(JSON.stringify(b.searchFullText(ORG, kb.id, { query: 'solar insulation grid', limit: 10 }))).toBe(answers);
  }, 60_000);
});
