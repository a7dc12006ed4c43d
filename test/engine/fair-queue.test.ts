// Fair indexing order (engine/ingest/fair-queue.ts and its use in engine/ingest/queue.ts): round
// robin across organizations, then across an organization's knowledge bases, first in first out
// within a knowledge base; dropped (superseded) entries; retries back in the fair queue; the depth;
// the batch size shared while several organizations wait.
import { describe, expect, test } from 'bun:test';
import { FairQueue, type Verdict } from '../../engine/ingest/fair-queue';
import { batchShare, IngestionQueue } from '../../engine/ingest/queue';
import type { Compute } from '../../engine/ingest/compute';
import type { ItemResult } from '../../engine/ingest/handlers';
import { KnowledgeBase } from '../../engine/kb/knowledge-base';
import { NO_EMBEDDING, textKbConfig } from '../helpers/kb-config';
import type { LogRecord } from '../../engine/records';

interface E {
  org: string;
  kb: string;
  n: number;
}

function filled(entries: [org: string, kb: string, count: number][]): FairQueue<E> {
  const q = new FairQueue<E>();
  for (const [org, kb, count] of entries) for (let n = 0; n < count; n++) q.push(org, kb, { org, kb, n });
  return q;
}

/** Batches of up to `max` as "kb:first-last", until the queue is empty. */
function drain(q: FairQueue<E>, max: number, judge: (e: E) => Verdict = () => 'take'): string[] {
  const out: string[] = [];
  for (let b = q.take(max, judge); b; b = q.take(max, judge)) {
    expect(b.entries.every((e) => e.kb === b.lane && e.org === b.org)).toBe(true);
    out.push(`${b.lane}:${b.entries[0]!.n}-${b.entries.at(-1)!.n}`);
  }
  return out;
}

describe('FairQueue', () => {
  test('one lane: first in first out, in batches of at most max', () => {
    const q = filled([['B', 'b1', 10]]);
    expect(q.size).toBe(10);
    expect(q.organizations).toBe(1);
    expect(drain(q, 4)).toEqual(['b1:0-3', 'b1:4-7', 'b1:8-9']);
    expect(q.size).toBe(0);
    expect(q.organizations).toBe(0);
    expect(q.take(4, () => 'take')).toBeUndefined();
  });

  test('organizations take turns, whatever order their entries came in', () => {
    const q = filled([
      ['B', 'b1', 6],
      ['C', 'c1', 4],
      ['A', 'a1', 1],
    ]);
    expect(q.organizations).toBe(3);
    expect(drain(q, 2)).toEqual(['b1:0-1', 'c1:0-1', 'a1:0-0', 'b1:2-3', 'c1:2-3', 'b1:4-5']);
  });

  test('a newcomer goes next, before another turn of the organization served alone so far', () => {
    const q = filled([['B', 'b1', 100]]);
    expect(drain1(q, 16)).toBe('b1:0-15');
    expect(drain1(q, 16)).toBe('b1:16-31');
    q.push('A', 'a1', { org: 'A', kb: 'a1', n: 0 });
    expect(q.organizations).toBe(2);
    expect(drain1(q, 16)).toBe('a1:0-0');
    expect(drain1(q, 16)).toBe('b1:32-47');
    expect(q.organizations).toBe(1);
  });

  test('a newcomer waits for the organizations already in line, not for the one just served', () => {
    const q = filled([
      ['B', 'b1', 100],
      ['C', 'c1', 100],
    ]);
    expect(drain1(q, 10)).toBe('b1:0-9'); // C is next in line, B just served
    q.push('A', 'a1', { org: 'A', kb: 'a1', n: 0 });
    expect([drain1(q, 10), drain1(q, 10), drain1(q, 10)]).toEqual(['c1:0-9', 'a1:0-0', 'b1:10-19']);
  });

  test("an organization's knowledge bases take turns within its turns", () => {
    const q = filled([
      ['B', 'b1', 5],
      ['B', 'b2', 2],
      ['A', 'a1', 3],
      ['A', 'a2', 1],
    ]);
    expect(drain(q, 2)).toEqual(['b1:0-1', 'a1:0-1', 'b2:0-1', 'a2:0-0', 'b1:2-3', 'a1:2-2', 'b1:4-4']);
  });

  test("one organization's many knowledge bases do not earn it more turns", () => {
    const q = filled([
      ['B', 'b1', 4],
      ['B', 'b2', 4],
      ['B', 'b3', 4],
      ['A', 'a1', 4],
    ]);
    expect(drain(q, 2).slice(0, 6)).toEqual(['b1:0-1', 'a1:0-1', 'b2:0-1', 'a1:2-3', 'b3:0-1', 'b1:2-3']);
  });

  test("'last' ends the batch; 'drop' removes the entry and does not count toward max", () => {
    const q = filled([['B', 'b1', 8]]);
    const judge = (e: E): Verdict => (e.n % 2 === 0 ? 'drop' : e.n === 5 ? 'last' : 'take');
    expect(q.take(2, judge)!.entries.map((e) => e.n)).toEqual([1, 3]);
    expect(q.size).toBe(4);
    expect(q.take(2, judge)!.entries.map((e) => e.n)).toEqual([5]); // 4 dropped, 5 the last
    expect(q.take(2, judge)!.entries.map((e) => e.n)).toEqual([7]);
    expect(q.size).toBe(0);
  });

  test('a turn that finds only dropped entries goes on to the next lane', () => {
    const q = filled([
      ['B', 'b1', 3],
      ['C', 'c1', 2],
      ['A', 'a1', 3],
    ]);
    const dropped: string[] = [];
    const judge = (e: E): Verdict => {
      if (e.kb === 'b1') {
        dropped.push(`${e.kb}:${e.n}`);
        return 'drop';
      }
      return 'take';
    };
    expect(q.take(10, judge)).toEqual({ org: 'C', lane: 'c1', entries: [0, 1].map((n) => ({ org: 'C', kb: 'c1', n })) });
    expect(dropped).toEqual(['b1:0', 'b1:1', 'b1:2']);
    expect([q.size, q.organizations]).toEqual([3, 1]);
    expect(drain(q, 10, judge)).toEqual(['a1:0-2']);
  });

  test('an entry pushed again (a retry) goes to the back of its lane, and a lane that emptied rejoins the line at its end', () => {
    const q = filled([
      ['B', 'b1', 4],
      ['C', 'c1', 2],
    ]);
    expect(drain1(q, 2)).toBe('b1:0-1');
    expect(drain1(q, 2)).toBe('c1:0-1'); // C empty: leaves the line
    q.push('B', 'b1', { org: 'B', kb: 'b1', n: 0 }); // b1:0 again (a retry)
    q.push('C', 'c1', { org: 'C', kb: 'c1', n: 0 }); // C back
    expect(drain(q, 2)).toEqual(['b1:2-3', 'c1:0-0', 'b1:0-0']);
  });

  test('size counts entries waiting; organizations those with entries waiting', () => {
    const q = filled([
      ['B', 'b1', 3],
      ['B', 'b2', 3],
      ['A', 'a1', 1],
    ]);
    expect([q.size, q.organizations]).toEqual([7, 2]);
    q.take(16, () => 'take'); // b1
    expect([q.size, q.organizations]).toEqual([4, 2]);
    q.take(16, () => 'take'); // a1
    expect([q.size, q.organizations]).toEqual([3, 1]);
    q.take(16, () => 'drop'); // b2, all dropped
    expect([q.size, q.organizations]).toEqual([0, 0]);
  });

  test('many entries: order kept, no quadratic shifting', () => {
    const q = filled([['B', 'b1', 200_000]]);
    let expected = 0;
    let ok = true;
    const started = performance.now();
    for (let b = q.take(16, () => 'take'); b; b = q.take(16, () => 'take')) for (const e of b.entries) ok &&= e.n === expected++;
    expect(ok).toBe(true);
    expect(expected).toBe(200_000);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

function drain1(q: FairQueue<E>, max: number): string {
  const b = q.take(max, () => 'take')!;
  return `${b.lane}:${b.entries[0]!.n}-${b.entries.at(-1)!.n}`;
}

test('batchShare: all of a batch for one organization alone; an equal share, not below a quarter, while several wait', () => {
  expect([1, 2, 3, 4, 8, 100].map((orgs) => batchShare(16, orgs))).toEqual([16, 8, 6, 4, 4, 4]);
  expect(batchShare(16, 0)).toBe(16);
  expect(batchShare(1, 5)).toBe(1);
});

// --- IngestionQueue with fake knowledge bases and workers ------------------------------------------

interface Call {
  texts: string[];
  finish: (results?: ItemResult[]) => void;
}

/** Held: nothing is sent until queue.start() (so a test can queue everything first). */
function harness(options: { held?: boolean; retry?: { attempts: number; baseMs: number; maxMs: number } } = {}) {
  const kbs = new Map<string, KnowledgeBase>();
  const calls: Call[] = [];
  const committed: LogRecord[] = [];
  const compute = {
    documents: { size: 1 },
    process(items: { text: string }[]): Promise<ItemResult[]> {
      return new Promise((resolve) => {
        calls.push({ texts: items.map((i) => i.text), finish: (results) => resolve(results ?? items.map(() => ({ ok: true, chunks: [] }))) });
      });
    },
  } as unknown as Compute;
  const queue = new IngestionQueue({
    knowledgeBases: kbs,
    compute,
    commit: async (record) => void committed.push(record),
    embeddingRetry: options.retry,
    log: () => {},
    held: options.held,
  });
  /** A knowledge base of `org` with `count` items, all queued (texts "<kbId>:<n>"). */
  const addKb = (org: string, kbId: string, count: number, textLength = 10) => {
    let kb = kbs.get(kbId);
    if (!kb) {
      const config = { ...textKbConfig(NO_EMBEDDING, { chunking: { size: 1000, overlap: 0 } }), id: 'cfg_0', createdAt: '' };
      kb = new KnowledgeBase({ id: kbId, orgId: org, name: kbId, description: '', type: 'TEXT_HIGH_QUALITY', config, createdAt: '', updatedAt: '' });
      kbs.set(kbId, kb);
    }
    for (let n = 0; n < count; n++) {
      const id = `${kbId}:${kb.contents.size}`;
      kb.putContent(id, { version: 1, text: id.padEnd(textLength, '.'), metadata: {}, source: { kind: 'text' } }, '');
      queue.enqueue(kbId, id, 1);
    }
    return kb;
  };
  /** Finish the oldest call in flight and let its results commit and the queue pump. */
  const finish = async (results?: ItemResult[]) => {
    const call = calls.shift()!;
    call.finish(results);
    await Bun.sleep(1);
    return call.texts.map((t) => t.replace(/\.+$/, ''));
  };
  return { kbs, calls, committed, queue, addKb, finish };
}

/** Texts "b1:0....." … "b1:15...." as "b1:0-15". */
const span = (texts: string[]) => {
  const ids = texts.map((t) => t.replace(/\.+$/, ''));
  return `${ids[0]}-${ids.at(-1)!.split(':')[1]}`;
};

describe('IngestionQueue order', () => {
  test("with another organization's batches in every slot, a single item goes out as soon as one batch finishes", async () => {
    const h = harness({ held: true });
    h.addKb('B', 'b1', 150);
    h.queue.start();
    // One worker: two batches in flight (one running, one waiting), full size while B is alone.
    expect(h.calls.map((c) => span(c.texts))).toEqual(['b1:0-15', 'b1:16-31']);
    expect(h.queue.depth).toBe(150 - 32 + 2);
    h.addKb('A', 'a1', 1);
    expect(h.calls).toHaveLength(2); // no slot free
    expect(h.queue.depth).toBe(150 - 32 + 1 + 2);
    await h.finish();
    expect(h.calls.map((c) => span(c.texts))).toEqual(['b1:16-31', 'a1:0-0']);
    await h.finish();
    expect(span(h.calls.at(-1)!.texts)).toBe('b1:32-47');
    while (h.calls.length > 0) await h.finish();
    expect(h.queue.depth).toBe(0);
    expect(h.committed.filter((r) => r.t === 'content.indexed')).toHaveLength(151);
  });

  test("organizations take turns in a shared batch size; an organization's knowledge bases take turns within its turns; one alone gets full batches", async () => {
    const h = harness({ held: true });
    h.addKb('B', 'b1', 40);
    h.addKb('B', 'b2', 40);
    h.addKb('C', 'c1', 40);
    h.queue.start();
    const sent: string[] = [];
    while (h.calls.length > 0) sent.push(span(await h.finish()));
    expect(sent.slice(0, 8)).toEqual(['b1:0-7', 'c1:0-7', 'b2:0-7', 'c1:8-15', 'b1:8-15', 'c1:16-23', 'b2:8-15', 'c1:24-31']);
    // C's last 8 with B, then B alone: full batches again, still taking turns between b1 and b2.
    expect(sent.slice(8)).toEqual(['b1:16-23', 'c1:32-39', 'b2:16-31', 'b1:24-39', 'b2:32-39']);
  });

  test('a text that cannot be read fails its batch; the queue goes on with the next', async () => {
    const h = harness({ held: true });
    const kb = h.addKb('B', 'b1', 3);
    Object.defineProperty(kb.contents.get('b1:1')!.current, 'text', {
      get() {
        throw new Error('text store: short read at 0');
      },
    });
    h.queue.start();
    expect(h.calls).toHaveLength(0);
    await Bun.sleep(10);
    expect(h.committed.filter((r) => r.t === 'content.failed').map((r) => (r as { error: string }).error)).toEqual(
      Array(3).fill('text store: short read at 0'),
    );
    h.addKb('B', 'b2', 2);
    // Both slots free again: the pump did not stop.
    expect(h.calls.map((c) => span(c.texts))).toEqual(['b2:0-0', 'b2:1-1']);
    while (h.calls.length > 0) await h.finish();
    expect(h.committed.filter((r) => r.t === 'content.indexed')).toHaveLength(2);
  });

  test('superseded and deleted entries are dropped (settled done) and never sent', async () => {
    const h = harness({ held: true });
    const kb = h.addKb('B', 'b1', 5);
    const settled: string[] = [];
    h.queue.enqueue('b1', 'b1:1', 1, (o) => settled.push(`b1:1 ${o}`)); // its version is superseded below
    kb.contents.get('b1:1')!.current.version = 2;
    h.queue.enqueue('b1', 'b1:1', 2);
    kb.contents.delete('b1:3');
    h.queue.enqueue('gone', 'x', 1, (o) => settled.push(`x ${o}`)); // knowledge base deleted
    expect(h.queue.depth).toBe(8);
    h.queue.start();
    expect(h.calls[0]!.texts.map((t) => t.replace(/\.+$/, ''))).toEqual(['b1:0', 'b1:2', 'b1:4', 'b1:1']);
    // The second slot found only x, dropped too.
    expect(settled).toEqual(['b1:1 done', 'x done']);
    expect(h.queue.depth).toBe(1);
    await h.finish();
    expect(h.queue.depth).toBe(0);
    expect(h.calls).toHaveLength(0);
  });

  test("an embedding retry re-enters the fair queue: at the back of its knowledge base, in its organization's turn", async () => {
    const h = harness({ held: true, retry: { attempts: 3, baseMs: 1, maxMs: 1 } });
    h.addKb('A', 'a1', 2);
    h.addKb('B', 'b1', 40);
    h.queue.start();
    // A's batch was taken first; then B was alone in the queue: a full batch.
    expect(h.calls.map((c) => span(c.texts))).toEqual(['a1:0-1', 'b1:0-15']);
    // a1:0 fails to embed (chunks kept): tried again after the backoff.
    const a = await h.finish([
      { ok: false, error: 'model down', chunks: [] },
      { ok: true, chunks: [] },
    ]);
    expect(a).toEqual(['a1:0', 'a1:1']);
    expect(h.kbs.get('a1')!.contents.get('a1:0')!.status).toBe('pending');
    expect(span(h.calls.at(-1)!.texts)).toBe('b1:16-31'); // A has nothing waiting until the retry
    await Bun.sleep(20); // the backoff; A is back and goes next
    await h.finish();
    expect(span(h.calls.at(-1)!.texts)).toBe('a1:0-0');
    while (h.calls.length > 0) await h.finish();
    expect(
      h.committed
        .filter((r) => r.t === 'content.indexed')
        .map((r) => (r as { id: string }).id)
        .filter((id) => id.startsWith('a1')),
    ).toEqual(['a1:1', 'a1:0']);
    expect(h.queue.depth).toBe(0);
  });
});
