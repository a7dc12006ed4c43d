// The compact in-memory layout of issue 25: item texts in a store out of the JavaScript heap, the
// chunk table in columns. Each structure alone against the obvious one, then the engine: searches,
// content reads, updates and deletes answer the same, and again after a restart.
import { afterEach, describe, expect, test } from 'bun:test';
import { linkSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from '../../engine';
import { DocTerms } from '../../engine/bm25/doc-terms';
import { InvertedIndex } from '../../engine/bm25/inverted-index';
import { idf, lengthNorm, termScore } from '../../engine/bm25/scorer';
import { DocSet } from '../../engine/filter/doc-set';
import { matchesFilter, MetadataIndex, type Metadata, type MetadataFilter } from '../../engine/filter/metadata';
import { ChunkTable } from '../../engine/kb/chunk-table';
import { ItemVersion } from '../../engine/kb/version';
import { TextStore } from '../../engine/text/text-store';
import { NO_EMBEDDING, textKbConfig } from '../helpers/kb-config';
import { mulberry32 } from '../helpers/random';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'kb-heap-layout-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function randomText(rand: () => number, length: number, wide: boolean): string {
  const alphabet = wide ? 'abc déf ĝħ 漢字 — “q” 😀 z\n' : 'abcdefghij klmno, pqrst. éàü\n';
  let s = '';
  while (s.length < length) s += alphabet[Math.floor(rand() * alphabet.length)]!;
  return s;
}

describe('TextStore', () => {
  test('texts read back whole and by character range, Latin-1 and wide, before and after a flush', () => {
    const store = new TextStore(tempDir());
    const rand = mulberry32(7);
    const texts: string[] = ['', 'a', 'ÿ', '😀', 'x'.repeat(3 << 20)];
    for (let i = 0; i < 400; i++) texts.push(randomText(rand, Math.floor(rand() * 20_000), rand() < 0.3));
    const refs = texts.map((t) => store.put(t));
    expect(refs[3]!.wide).toBe(true);
    expect(refs[2]!.wide).toBe(false);
    for (let i = 0; i < texts.length; i++) {
      const t = texts[i]!;
      expect(store.read(refs[i]!)).toBe(t);
      for (let k = 0; k < 5; k++) {
        const a = Math.floor(rand() * (t.length + 1));
        const b = a + Math.floor(rand() * 3000);
        expect(store.read(refs[i]!, a, b)).toBe(t.slice(a, b));
      }
    }
    expect(store.bytes.live).toBeGreaterThan(3 << 20);
    store.release(refs[4]!);
    expect(store.bytes.dead).toBe(3 << 20);
    store.close();
  });

  test('rewrite keeps the texts asked for, in a new file of just their bytes, wherever they lay (past its window too)', () => {
    const dir = tempDir();
    const store = new TextStore(dir);
    const rand = mulberry32(9);
    const texts: string[] = ['', 'ÿ', 'y'.repeat(5 << 20), randomText(rand, 3 << 20, true)];
    for (let i = 0; i < 600; i++) texts.push(randomText(rand, Math.floor(rand() * 30_000), rand() < 0.3));
    const refs = texts.map((t) => store.put(t));
    // Every third text dies; the rest are kept, asked for out of file order.
    const kept = texts.map((_, i) => i).filter((i) => i % 3 !== 1);
    for (let i = 1; i < texts.length; i += 3) store.release(refs[i]!);
    const order = [...kept].sort(() => rand() - 0.5);
    const moved = store.rewrite(order.map((i) => refs[i]!));
    const liveBytes = order.reduce((sum, i) => sum + (refs[i]!.wide ? 2 : 1) * texts[i]!.length, 0);
    expect(store.bytes).toEqual({ live: liveBytes, dead: 0 });
    expect(statSync(join(dir, 'texts.bin')).size).toBe(liveBytes);
    order.forEach((i, k) => expect(store.read(moved[k]!)).toBe(texts[i]!));
    // Appends follow.
    const after = store.put('written after');
    expect(after.at).toBe(liveBytes);
    expect(store.read(after)).toBe('written after');
    store.close();
  });

  test('a new store replaces the file a link keeps; a store takes over a linked copy, cut to its length; close removes its file', () => {
    const dir = tempDir();
    const store = new TextStore(dir);
    const first = store.put('kept by the link');
    expect(readdirSync(dir)).toEqual(['texts.bin']);
    const written = store.writtenFile();
    expect(written.bytes).toBe(16);
    const link = join(tempDir(), 'snapshot-texts.bin');
    linkSync(written.path, link);
    store.put(' and more after the link was taken');
    expect(store.writtenFile().bytes).toBe(50);
    store.close();
    expect(readdirSync(dir)).toEqual([]);

    // A new store never writes into the linked inode.
    const fresh = new TextStore(dir);
    fresh.put('x'.repeat(100));
    fresh.writtenFile();
    expect(readFileSync(link, 'latin1')).toBe('kept by the link and more after the link was taken');
    fresh.close();

    const adopted = new TextStore(dir);
    adopted.adopt(link, written.bytes, written.bytes);
    expect(statSync(link).size).toBe(16);
    expect(adopted.read(first)).toBe('kept by the link');
    const next = adopted.put('Ünïcode ☃');
    expect(next.at).toBe(16);
    expect(adopted.read(next)).toBe('Ünïcode ☃');
    expect(adopted.bytes).toEqual({ live: 16 + 18, dead: 0 });
    expect(() => adopted.adopt(link, 16, 16)).toThrow(/empty/);
    adopted.close();
  });
});

describe('ItemVersion', () => {
  test('the text is held until moved, then read from the store; slices equal String.slice', () => {
    const store = new TextStore(tempDir());
    const text = 'Vitamin D — “a study” of 25(OH)D levels 😀 in 1,000 patients.';
    const v = new ItemVersion({ version: 3, text, metadata: { a: 1 }, source: { kind: 'text' }, pages: [0, 10] });
    expect(v.stored).toBe(false);
    v.moveTo(store);
    expect(v.stored).toBe(true);
    expect(v.text).toBe(text);
    expect(v.textLength).toBe(text.length);
    expect({ version: v.version, metadata: v.metadata, source: v.source, pages: v.pages }).toEqual({
      version: 3,
      metadata: { a: 1 },
      source: { kind: 'text' },
      pages: [0, 10],
    });
    for (let a = 0; a <= text.length + 2; a += 3) for (let b = a; b <= text.length + 5; b += 7) expect(v.slice(a, b)).toBe(text.slice(a, b));
    v.release();
    v.release();
    expect(store.bytes.live).toBe(0);
    expect(v.text).toBe(text);
    store.close();
  });
});

describe('ChunkTable', () => {
  test('answers as one object per chunk would: ids of any shape, spans, pages, gaps and clears', () => {
    const table = new ChunkTable<{ n: number }>();
    const rand = mulberry32(3);
    const reference: ({ owner: { n: number }; id: string; start: number; end: number; page?: number } | undefined)[] = [];
    const hex = () => Array.from({ length: 28 }, () => '0123456789abcdef'[Math.floor(rand() * 16)]).join('');
    for (let i = 0; i < 5000; i++) {
      if (rand() < 0.05) {
        const gap = reference.length + Math.floor(rand() * 10);
        table.skipTo(gap);
        reference.length = gap;
      }
      const kind = rand();
      const id = kind < 0.8 ? `ch_${hex()}` : kind < 0.9 ? `other-${i}` : kind < 0.95 ? `xy_${hex()}` : `CH_${hex()}`;
      const owner = { n: i };
      const page = rand() < 0.5 ? undefined : Math.floor(rand() * 4);
      const start = Math.floor(rand() * 1e6);
      const doc = table.push(owner, id, start, start + 100, page);
      expect(doc).toBe(reference.length);
      reference.push({ owner, id, start, end: start + 100, page });
    }
    for (let i = 0; i < 500; i++) {
      const d = Math.floor(rand() * reference.length);
      table.clear(d);
      reference[d] = undefined;
    }
    expect(table.length).toBe(reference.length);
    for (let d = 0; d < reference.length; d++) {
      const r = reference[d];
      expect(table.owner(d)).toBe(r?.owner);
      expect(table.id(d)).toBe(r?.id);
      if (r) expect([table.startOf(d), table.endOf(d), table.pageOf(d)]).toEqual([r.start, r.end, r.page]);
    }
    expect(() => table.skipTo(3)).toThrow();
  });
});

describe('DocTerms', () => {
  test('gives back each document its ids (sorted, duplicates kept) through sets, deletes and compactions', () => {
    const terms = new DocTerms();
    const rand = mulberry32(5);
    const reference = new Map<number, number[]>();
    let doc = 0;
    for (let round = 0; round < 20_000; round++) {
      if (rand() < 0.6 || reference.size === 0) {
        doc += 1 + Math.floor(rand() * 3);
        // Ids from small to past 2^21 (varints of 1 to 4 bytes), some listed twice, some documents empty.
        const n = Math.floor(rand() * 60);
        const ids = Array.from({ length: n }, () => Math.floor(rand() ** 3 * 3_000_000));
        if (n > 2) ids.push(ids[0]!);
        terms.set(doc, Int32Array.from(ids));
        reference.set(
          doc,
          ids.sort((a, b) => a - b),
        );
      } else {
        const keys = [...reference.keys()];
        const d = keys[Math.floor(rand() * keys.length)]!;
        terms.delete(d);
        reference.delete(d);
      }
    }
    for (let d = 0; d <= doc + 1; d++) {
      const { ids, count } = terms.read(d);
      expect([terms.has(d), [...ids.subarray(0, count)]]).toEqual([reference.has(d), reference.get(d) ?? []]);
    }
    // Compaction kept the pool near the live entries (deletes removed about 40% of all written).
    expect(terms.byteLength).toBeLessThan(4 * doc + 3 * 30 * 2.5 * reference.size);
  });
});

describe('BM25 postings with one-byte term frequencies', () => {
  test('frequencies of 255 and more (and past the 65,535 cap) score exactly, through merges and compactions', () => {
    const params = { k1: 1.2, b: 0.75 };
    const index = new InvertedIndex(params);
    const rand = mulberry32(13);
    const choices = [1, 2, 3, 254, 255, 256, 300, 65_534, 65_535, 70_000];
    const expected = new Map<number, Map<string, number>>();
    const lengths = new Map<number, number>();
    const seen = new Map<number, number>();
    const N = 3000;
    for (let d = 0; d < N; d++) {
      const terms: string[] = [];
      const tfs: number[] = [];
      const want = new Map<string, number>();
      for (let i = 0; i < 1 + Math.floor(rand() * 6); i++) {
        const term = `t${Math.floor(rand() * 12)}`;
        const tf = choices[Math.floor(rand() * choices.length)]!;
        // A term listed twice adds to its posting (capped at 65,535).
        terms.push(term);
        tfs.push(tf);
        want.set(term, Math.min(65_535, (want.get(term) ?? 0) + tf));
      }
      const length = 10 + Math.floor(rand() * 100);
      index.add(d, { terms, tfs, length });
      seen.set(d, terms.length);
      expected.set(d, want);
      lengths.set(d, length);
    }
    // Deletes: lists compact (and drop their large frequencies of deleted documents). Documents
    // listing a term twice are kept: remove() counts such a term's df down twice (as before this
    // layout; the analyzer never lists a term twice).
    const listedTwice = (d: number) => [...expected.get(d)!.keys()].length !== seen.get(d);
    for (let d = 0; d < N; d += 2) {
      if (listedTwice(d)) continue;
      index.remove(d);
      expected.delete(d);
      lengths.delete(d);
    }
    const all = Array.from({ length: N }, (_, d) => d);
    const avg = [...lengths.values()].reduce((a, b) => a + b, 0) / lengths.size;
    for (let t = 0; t < 12; t++) {
      const term = `t${t}`;
      const holders = [...expected].filter(([, m]) => m.has(term)).map(([d]) => d);
      const scores = index.scoreDocs([term], all);
      for (const d of holders) {
        const tf = expected.get(d)!.get(term)!;
        expect(index.explain([term], d)!.terms[0]!.tf).toBe(tf);
        expect(scores[d]!).toBeCloseTo(termScore(params, idf(expected.size, holders.length), tf, lengthNorm(params, lengths.get(d)!, avg)), 9);
      }
      const top = all
        .filter((d) => scores[d]! > 0)
        .sort((a, b) => scores[b]! - scores[a]! || a - b)
        .slice(0, 20)
        .map((d) => ({ doc: d, score: scores[d]! }));
      expect(index.search([term], 20)).toEqual(top);
    }
  });
});

describe('MetadataIndex in typed arrays', () => {
  test('matches as the rule does through many adds (some out of order, some repeated) and removes', () => {
    const rand = mulberry32(9);
    const index = new MetadataIndex();
    const live = new Map<number, Metadata>();
    let next = 0;
    for (let round = 0; round < 6000; round++) {
      const r = rand();
      if (r < 0.55 || live.size === 0) {
        // Mostly increasing numbers; now and then one below the last (the slow path).
        const doc = rand() < 0.05 && next > 10 ? next - 1 - Math.floor(rand() * 10) : next++;
        if (live.has(doc)) continue;
        const tag = `g${Math.floor(rand() * 6)}`;
        const m: Metadata = { team: `t${Math.floor(rand() * 3)}`, tags: [tag, tag, `g${Math.floor(rand() * 6)}`], n: Math.floor(rand() * 40) };
        index.add(doc, m);
        if (rand() < 0.1) index.add(doc, m);
        live.set(doc, m);
      } else {
        const keys = [...live.keys()];
        const doc = keys[Math.floor(rand() * keys.length)]!;
        index.remove(doc, live.get(doc)!);
        if (rand() < 0.1) index.remove(doc, live.get(doc)!);
        live.delete(doc);
      }
      if (round % 500 === 0 || round === 5999) {
        const filters: MetadataFilter[] = [
          { team: 't1' },
          { tags: 'g2' },
          { tags: ['g0', 'g5'], team: 't2' },
          { n: [1, 2, 3] },
          { n: 7, tags: 'g1' },
          { nothing: 1 },
        ];
        for (const f of filters) {
          const expected = [...live.keys()].filter((d) => matchesFilter(live.get(d)!, f)).sort((a, b) => a - b);
          const liveSet = DocSet.ofList(Uint32Array.from([...live.keys()].sort((a, b) => a - b)), next);
          expect([...index.matching(f, { space: next, live: liveSet }).list()]).toEqual(expected);
        }
      }
    }
  });
});

describe('engine with texts out of the heap', () => {
  const ORG = 'org_heap';
  const engines: Engine[] = [];
  afterEach(async () => {
    for (const e of engines.splice(0)) await e.close().catch(() => {});
  });
  const open = async (dataDir: string) => {
    const e = await Engine.open({ dataDir, compute: { documentWorkers: 1 }, log: () => {} });
    engines.push(e);
    return e;
  };

  test('searches, reads, updates and deletes answer the same before and after a restart', async () => {
    const dir = tempDir();
    const rand = mulberry32(11);
    let e = await open(dir);
    const kb = await e.createKnowledgeBase(ORG, {
      name: 'h',
      description: '',
      type: 'TEXT_HIGH_QUALITY',
      config: textKbConfig(NO_EMBEDDING, { chunking: { size: 300, overlap: 40 } }),
    });
    const words = ['vitamin', 'déficit', 'protein', 'cell', 'naïve', 'β-cell', '漢字', 'insulin', 'tumour', 'growth', 'rate', '😀'];
    const texts = Array.from({ length: 40 }, (_, i) =>
      Array.from({ length: 30 + Math.floor(rand() * 200) }, () => words[Math.floor(rand() * (i % 3 === 0 ? words.length : 9))]).join(' '),
    );
    const ids: string[] = [];
    for (let i = 0; i < texts.length; i++) ids.push((await e.addContent(ORG, kb.id, { text: texts[i]!, metadata: { n: i % 4 } })).id);
    await e.updateContent(ORG, kb.id, ids[1]!, { text: 'an updated text about insulin and growth' });
    await e.deleteContent(ORG, kb.id, ids[2]!);
    while (
      e.stats().queueDepth > 0 ||
      e
        .knowledgeBase(kb.id)!
        .contents.values()
        .some((i) => i.status === 'pending' || i.status === 'processing')
    )
      await Bun.sleep(20);

    const queries = ['vitamin cell', 'insulin growth', '漢字', 'naïve β-cell tumour', 'updated', 'rate'];
    const answers = (eng: Engine) => ({
      search: queries.map((query) => eng.searchFullText(ORG, kb.id, { query, limit: 10 }).map(({ doc, ...hit }) => hit)),
      filtered: eng.searchFullText(ORG, kb.id, { query: 'cell', limit: 5, filter: { n: 1 } }),
      contents: eng.listContents(ORG, kb.id, 0, 100).items.map((i) => ({ id: i.id, text: i.current.text, metadata: i.current.metadata, chunks: i.live?.docs })),
    });
    const before = answers(e);
    // Texts are what was written: the store gives back the very strings.
    const byId = new Map(before.contents.map((c) => [c.id, c.text]));
    expect(byId.get(ids[0]!)).toBe(texts[0]!);
    expect(byId.get(ids[3]!)).toBe(texts[3]!);
    expect(byId.get(ids[1]!)).toBe('an updated text about insulin and growth');
    expect(byId.has(ids[2]!)).toBe(false);
    // Every hit's text is its chunk of the item's text.
    for (const hits of before.search) for (const h of hits) expect(byId.get(h.contentId)!.includes(h.text)).toBe(true);
    expect(before.search.flat().length).toBeGreaterThan(20);
    // Indexed texts left the heap.
    const item = e.knowledgeBase(kb.id)!.contents.get(ids[0]!)!;
    expect((item.current as ItemVersion).stored).toBe(true);

    await e.close();
    engines.length = 0;
    e = await open(dir);
    expect(answers(e)).toEqual(before);
    // An update after the restart: the old chunks answer until the new ones, then the new text.
    await e.updateContent(ORG, kb.id, ids[0]!, { text: 'replaced by words of its own: zebra' });
    const replaced = e.knowledgeBase(kb.id)!.contents.get(ids[0]!)!;
    expect(replaced.current.text).toBe('replaced by words of its own: zebra');
    while (replaced.status !== 'ready') await Bun.sleep(20);
    expect(e.searchFullText(ORG, kb.id, { query: 'zebra', limit: 3 }).map((h) => [h.contentId, h.text])).toEqual([
      [ids[0]!, 'replaced by words of its own: zebra'],
    ]);
  });

  test('a text goes to the store when written; a version replaced or deleted counts its text as dead, once, through a restart', async () => {
    const dir = tempDir();
    let e = await open(dir);
    const kb = await e.createKnowledgeBase(ORG, { name: 'dead', description: '', type: 'TEXT_HIGH_QUALITY', config: textKbConfig(NO_EMBEDDING) });
    const texts = async () => (await e.metrics()).textBytes;
    const settled = async () => {
      while (e.stats().queueDepth > 0 || [...e.knowledgeBase(kb.id)!.contents.values()].some((i) => i.status === 'pending' || i.status === 'processing'))
        await Bun.sleep(20);
    };
    const t = (n: number) => `version ${n} of the text ${'x'.repeat(10 * n)}`;
    const a = await e.addContent(ORG, kb.id, { text: t(1) });
    // Waiting for indexing, the text is in the store already, not on the heap.
    expect((e.knowledgeBase(kb.id)!.contents.get(a.id)!.current as ItemVersion).stored).toBe(true);
    await settled();
    expect(await texts()).toEqual({ live: t(1).length, dead: 0 });
    // Replaced once indexed: the old text answers until the new one does, then it is dead.
    await e.updateContent(ORG, kb.id, a.id, { text: t(2) });
    expect((await texts()).dead).toBe(0);
    await settled();
    expect(await texts()).toEqual({ live: t(2).length, dead: t(1).length });
    // Replaced while waiting (or being indexed): version 3 never answers; its text is dead too.
    await e.updateContent(ORG, kb.id, a.id, { text: t(3) });
    await e.updateContent(ORG, kb.id, a.id, { text: t(4) });
    await settled();
    const dead = t(1).length + t(2).length + t(3).length;
    expect(await texts()).toEqual({ live: t(4).length, dead });
    const b = await e.addContent(ORG, kb.id, { text: t(5) });
    await settled();
    await e.deleteContent(ORG, kb.id, b.id);
    expect(await texts()).toEqual({ live: t(4).length, dead: dead + t(5).length });
    expect(e.getContent(ORG, kb.id, a.id).current.text).toBe(t(4));

    await e.close();
    engines.length = 0;
    e = await open(dir);
    expect(await texts()).toEqual({ live: t(4).length, dead: dead + t(5).length });
    expect(e.getContent(ORG, kb.id, a.id).current.text).toBe(t(4));
  });
});
