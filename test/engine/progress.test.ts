// Ingestion progress (engine/ingest/progress.ts): the pace over a sliding minute and the estimate
// of what is left, on a clock the test moves; the counts by status a knowledge base keeps as items
// change (engine/kb/status-tally.ts), which must always equal a walk over its items.
import { expect, test } from 'bun:test';
import fc from 'fast-check';
import { progressOf, ThroughputMeter } from '../../engine/ingest/progress';
import { KnowledgeBase } from '../../engine/kb/knowledge-base';
import { estimatedChunks } from '../../engine/kb/status-tally';
import type { ContentStatus } from '../../engine/records';

function meterAt(start = 1_000_000) {
  const clock = { now: start };
  return { clock, meter: new ThroughputMeter(() => clock.now) };
}

test('the pace divides by the time since the oldest batch began, not by a whole minute', () => {
  const { clock, meter } = meterAt();
  expect(meter.perSecond('kb_a')).toBe(0);
  meter.record({ kbId: 'kb_a', chunks: 50, millis: 5_000 }); // 5 s of work ending now
  clock.now += 5_000;
  meter.record({ kbId: 'kb_a', chunks: 50, millis: 5_000 });
  expect(meter.perSecond('kb_a')).toBeCloseTo(100 / 10, 5);
  // Another knowledge base counts in the total only.
  meter.record({ kbId: 'kb_b', chunks: 20, millis: 1_000 });
  expect(meter.perSecond('kb_a')).toBeCloseTo(10, 5);
  expect(meter.perSecond()).toBeCloseTo(120 / 10, 5);
});

test('batches older than a minute leave the window; an idle meter reads 0', () => {
  const { clock, meter } = meterAt();
  meter.record({ kbId: 'kb_a', chunks: 600, millis: 60_000 });
  expect(meter.perSecond('kb_a')).toBeCloseTo(10, 5);
  clock.now += 30_000;
  meter.record({ kbId: 'kb_a', chunks: 30, millis: 30_000 });
  // The window is capped at a minute: (600 + 30) chunks over 60 s.
  expect(meter.perSecond('kb_a')).toBeCloseTo(630 / 60, 5);
  clock.now += 30_001; // the first batch ended more than a minute ago
  expect(meter.perSecond('kb_a')).toBeCloseTo(30 / 60, 5);
  clock.now += 60_000;
  expect(meter.perSecond('kb_a')).toBe(0);
  expect(meter.perSecond()).toBe(0);
});

test('a very short first batch does not read as an absurd pace', () => {
  const { meter } = meterAt();
  meter.record({ kbId: 'kb_a', chunks: 5, millis: 10 });
  expect(meter.perSecond('kb_a')).toBe(5); // at least one second is assumed
});

test('chunks are estimated from the text length over the chunk step', () => {
  const chunking = { size: 1000, overlap: 100 };
  expect(estimatedChunks(0, chunking)).toBe(0);
  expect(estimatedChunks(10, chunking)).toBe(1);
  expect(estimatedChunks(1000, chunking)).toBe(1);
  expect(estimatedChunks(1001, chunking)).toBe(2);
  expect(estimatedChunks(1900, chunking)).toBe(2);
  expect(estimatedChunks(1901, chunking)).toBe(3);
});

function knowledgeBase(chunking = { size: 1000, overlap: 100 }): KnowledgeBase {
  const at = new Date().toISOString();
  return new KnowledgeBase({
    id: 'kb_p',
    orgId: 'org',
    name: 'p',
    description: '',
    type: 'TEXT_HIGH_QUALITY',
    createdAt: at,
    updatedAt: at,
    config: {
      id: 'cfg_p',
      createdAt: at,
      type: 'TEXT_HIGH_QUALITY',
      embedding: { provider: 'none' },
      chunking,
      bm25: { k1: 1.2, b: 0.75 },
      hnsw: { connectivity: 16, expansionAdd: 128, expansionSearch: 64 },
      modalities: ['text'],
    },
  } as never);
}

test('progress counts items by status, the chunks still waiting, and the time left at the pace', () => {
  const kb = knowledgeBase();
  const add = (id: string, text: string, status: ContentStatus) => {
    kb.setStatus(kb.putContent(id, { version: 1, text, metadata: {}, source: { kind: 'text' } }, new Date().toISOString()), status);
  };
  add('c1', 'x'.repeat(1901), 'pending'); // 3 chunks
  add('c2', 'x'.repeat(500), 'processing'); // 1
  add('c3', 'x'.repeat(5000), 'ready');
  add('c4', 'x', 'failed');
  expect(progressOf([kb], 0)).toEqual({ contents: { pending: 1, processing: 1, ready: 1, failed: 1 }, chunksWaiting: 4, chunksPerSecond: 0, etaSeconds: null });
  expect(progressOf([kb], 3)).toMatchObject({ chunksWaiting: 4, chunksPerSecond: 3, etaSeconds: 2 });
  // A large item processing in runs: what it has done leaves the waiting count.
  expect(progressOf([kb], 3, (item) => (item.id === 'c2' ? 1 : 0))).toMatchObject({ chunksWaiting: 3 });
  kb.setStatus(kb.contents.get('c1')!, 'ready');
  kb.setStatus(kb.contents.get('c2')!, 'ready');
  expect(progressOf([kb], 3)).toMatchObject({ contents: { pending: 0, processing: 0, ready: 3, failed: 1 }, chunksWaiting: 0, etaSeconds: 0 });
});

/** What the tally must say: a walk over every item. */
function walked(kb: KnowledgeBase) {
  const contents = { pending: 0, processing: 0, ready: 0, failed: 0 };
  let chunksWaiting = 0;
  for (const item of kb.contents.values()) {
    contents[item.status]++;
    if (item.status === 'pending' || item.status === 'processing') chunksWaiting += estimatedChunks(item.current.text.length, kb.record.config.chunking);
  }
  return { contents, chunksWaiting };
}

test('the counts by status follow every change: new items, new texts while waiting, statuses, deletions, clearing', () => {
  const statuses: ContentStatus[] = ['pending', 'processing', 'ready', 'failed'];
  const step = fc.oneof(
    fc.record({ op: fc.constant('put' as const), id: fc.integer({ min: 0, max: 7 }), length: fc.integer({ min: 0, max: 4000 }) }),
    fc.record({ op: fc.constant('status' as const), id: fc.integer({ min: 0, max: 7 }), status: fc.constantFrom(...statuses) }),
    fc.record({ op: fc.constant('delete' as const), id: fc.integer({ min: 0, max: 7 }) }),
    fc.record({ op: fc.constant('clear' as const) }),
  );
  fc.assert(
    fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
      const kb = knowledgeBase();
      let version = 0;
      for (const s of steps) {
        const id = 'id' in s ? `c${s.id}` : '';
        const item = kb.contents.get(id);
        if (s.op === 'put')
          kb.putContent(id, { version: ++version, text: 'x'.repeat(s.length), metadata: {}, source: { kind: 'text' } }, new Date().toISOString());
        else if (s.op === 'status' && item) kb.setStatus(item, s.status, s.status === 'failed' ? 'no' : undefined);
        else if (s.op === 'delete') kb.deleteContent(id);
        else if (s.op === 'clear') kb.clear();
        expect(progressOf([kb], 0)).toMatchObject(walked(kb));
      }
    }),
    { numRuns: 300 },
  );
});

test('a build counts the items whose newest version has an outcome in it, and the chunks of the others, as outcomes, versions and items change', () => {
  const id = fc.integer({ min: 0, max: 5 });
  const step = fc.oneof(
    { weight: 4, arbitrary: fc.record({ op: fc.constant('put' as const), id, length: fc.integer({ min: 0, max: 5000 }) }) },
    { weight: 6, arbitrary: fc.record({ op: fc.constant('outcome' as const), id, stale: fc.boolean(), failed: fc.boolean() }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), id }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constantFrom('start' as const, 'cancel' as const, 'activate' as const, 'clear' as const) }) },
  );
  fc.assert(
    fc.property(fc.array(step, { minLength: 10, maxLength: 80 }), (steps) => {
      const kb = knowledgeBase();
      let version = 0;
      let configs = 0;
      kb.startBuilding({ ...kb.record.config, id: `cfg_${++configs}` });
      for (const s of steps) {
        const id = 'id' in s ? `c${s.id}` : '';
        const item = kb.contents.get(id);
        const building = kb.building && kb.indexSet(kb.building.id);
        if (s.op === 'put')
          kb.putContent(id, { version: ++version, text: 'x'.repeat(s.length), metadata: {}, source: { kind: 'text' } }, new Date().toISOString());
        else if (s.op === 'outcome' && item && building)
          kb.recordOutcome(building, id, { version: item.current.version - (s.stale ? 1 : 0), status: s.failed ? 'failed' : 'ready' });
        else if (s.op === 'delete') kb.deleteContent(id);
        else if (s.op === 'start') kb.startBuilding({ ...kb.record.config, id: `cfg_${++configs}` });
        else if (s.op === 'cancel') kb.cancelBuilding();
        else if (s.op === 'activate' && kb.building) kb.activateBuilding(new Date().toISOString());
        else if (s.op === 'clear') kb.clear();
        const set = kb.building && kb.indexSet(kb.building.id);
        const built = set ? [...kb.contents.values()].filter((i) => kb.statusIn(set, i) !== 'pending').length : undefined;
        expect(kb.buildProgress()?.done).toBe(built);
        // What reembedProgress reports as the chunks left: the estimate of every item not built yet.
        const chunksLeft = set
          ? [...kb.contents.values()]
              .filter((i) => kb.statusIn(set, i) === 'pending')
              .reduce((sum, i) => sum + estimatedChunks(i.current.text.length, set.config.chunking), 0)
          : undefined;
        expect(kb.buildProgress()?.chunksLeft).toBe(chunksLeft);
        if (set) expect(kb.buildProgress()?.total).toBe(kb.contents.size);
        // Activation gives items their outcomes as statuses: the status counts follow.
        expect(progressOf([kb], 0)).toMatchObject(walked(kb));
      }
    }),
    { numRuns: 300 },
  );
});
