// Index dumps (snapshots/index-dump.ts): an InvertedIndex and a ChunkTable written to a file and
// loaded back answer exactly as the originals, before and after further changes; a damaged,
// cut or foreign dump is refused. Index deltas (engine/kb/index-delta.ts) applied to their base
// give the same sections as a full dump.
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvertedIndex } from '../../engine/bm25/inverted-index';
import { ChunkTable } from '../../engine/kb/chunk-table';
import { DuplicateGroups } from '../../engine/vector/duplicate-groups';
import { applyIndexDelta, indexDelta, indexMark } from '../../engine/kb/index-delta';
import { prepareIndexDelta, prepareIndexDump, readIndexDelta, readIndexDump } from '../../snapshots/index-dump';
import { mulberry32 } from '../helpers/random';

/** The PRNG with an integer helper. */
class Rng {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'index-dump-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const params = { k1: 1.2, b: 0.75 };
const VOCAB = Array.from({ length: 300 }, (_, i) => `w${i}`);

/** A random document: Zipf-ish terms, sometimes a huge tf (stored apart from the byte tfs). */
function randomDoc(rng: Rng, start: number) {
  const counts = new Map<string, number>();
  const n = 3 + rng.int(40);
  for (let i = 0; i < n; i++) {
    const t = VOCAB[Math.floor(VOCAB.length * rng.next() ** 3)]!;
    counts.set(t, (counts.get(t) ?? 0) + 1);
  }
  if (rng.next() < 0.05) counts.set('huge', 300 + rng.int(2000));
  const terms = [...counts.keys()];
  const tfs = [...counts.values()];
  const length = tfs.reduce((a, b) => a + b, 0);
  return { terms, tfs, length, start, end: start + length * 5 };
}

/** Items of 1–4 chunks, grouped with overlaps, about a third of them deleted (lists compact), some left unsettled. */
function build(rng: Rng, index: InvertedIndex, table: ChunkTable<object>, items: number) {
  const owners: object[] = [];
  let doc = 0;
  for (let it = 0; it < items; it++) {
    const owner = { it };
    owners.push(owner);
    const chunks = 1 + rng.int(4);
    const docs: number[] = [];
    for (let c = 0; c < chunks; c++) {
      if (rng.next() < 0.05) {
        doc += 2; // a gap, as a compacted log leaves
        table.skipTo(doc);
      }
      index.add(doc, randomDoc(rng, c * 100));
      // Ids of the service's shape, and a few of another.
      const id = rng.next() < 0.1 ? `custom-${it}-${c}` : `ch_${doc.toString(16).padStart(28, '0')}`;
      table.push(owner, id, c * 100, c * 100 + 90, rng.next() < 0.3 ? c : undefined);
      docs.push(doc++);
    }
    if (chunks > 1 && it % 7 !== 0) index.group(docs, { terms: ['w0', 'w1'], tfs: [1, 1], length: 2 });
  }
  index.settle();
  for (let d = 0; d < doc; d++)
    if (rng.next() < 0.33 && index.has(d)) {
      index.remove(d);
      table.clear(d);
    }
  // Unsettled documents after the last settle, each a group of its own.
  for (let i = 0; i < 5; i++) {
    index.add(doc, randomDoc(rng, 0));
    table.push({ late: i }, `ch_${doc.toString(16).padStart(28, '0')}`, 0, 10, undefined);
    doc++;
  }
  return doc;
}

async function roundTrip<O extends object>(name: string, index: InvertedIndex, table: ChunkTable<O>) {
  const path = join(dir, name);
  const whole = await prepareIndexDump('kb_x', 'cfg_x', { bm25: index.dump(), chunks: table.dump() }).write(path);
  expect(whole.bytes).toBe(statSync(path).size);
  return { path, whole, dump: readIndexDump(path, 'kb_x', 'cfg_x', whole) };
}

const QUERIES = [['w0'], ['w1', 'w2'], ['w3', 'w50', 'w299'], ['huge', 'w5'], ['w7', 'w7', 'w8'], ['nothing'], VOCAB.slice(0, 12)];

/** Everything searches read of an index. */
function answers(index: InvertedIndex, docs: number) {
  const all = Array.from({ length: docs }, (_, d) => d);
  const mask = Uint8Array.from(all, (d) => d % 3);
  return JSON.stringify({
    counts: [index.docCount, index.termCount, index.avgDocLength, index.groupCount, index.avgGroupLength, index.termTotal],
    search: QUERIES.map((q) => [index.search(q, 10), index.search(q, 1000), index.search(q, 10, mask)]),
    scores: QUERIES.map((q) => [index.scoreDocs(q, all), index.groupScores(q, all), index.maxScore(q)]),
    explain: QUERIES.map((q) => all.map((d) => index.explain(q, d))),
    docs: all.map((d) => [index.has(d), index.lengthOf(d), index.groupIdOf(d), index.membersOf(d), index.spanOf(d)]),
    unsettled: index.unsettled(),
  });
}

function tableOf<O extends object>(table: ChunkTable<O>, docs: number) {
  return JSON.stringify(Array.from({ length: docs }, (_, d) => [table.owner(d), table.id(d), table.startOf(d), table.endOf(d), table.pageOf(d)]));
}

describe('index dumps', () => {
  test('a loaded index answers as the original: counts, search, scores, explain, groups, after deletes and grouping', async () => {
    const rng = new Rng(7);
    const index = new InvertedIndex(params);
    const table = new ChunkTable<object>();
    // Enough documents for the commonest terms' lists to get arrays of their own when read back.
    const docs = build(rng, index, table, 700);
    expect(index.groupCount).toBeLessThan(index.docCount); // items were grouped
    const { dump } = await roundTrip('a.dump', index, table);
    const loaded = new InvertedIndex(params);
    loaded.load(dump.bm25);
    expect(answers(loaded, docs)).toBe(answers(index, docs));
    expect(loaded.version).toBe(index.version);

    // The chunk table: owners come from the caller (the replayed items), columns from the dump.
    const owners = Array.from({ length: table.length }, (_, d) => table.owner(d));
    const t2 = new ChunkTable<object>();
    t2.load(dump.chunks, owners);
    expect(t2.length).toBe(table.length);
    expect(tableOf(t2, docs)).toBe(tableOf(table, docs));

    // Both go on alike: adds past the loaded documents (posting lists leave the dump's arrays),
    // deletes (compaction inside them), grouping, settling.
    for (const ix of [index, loaded]) {
      const r = new Rng(99);
      for (let d = docs; d < docs + 60; d++) ix.add(d, randomDoc(r, 0));
      ix.group([docs, docs + 1, docs + 2], { terms: ['w0'], tfs: [1], length: 1 });
      ix.settle();
      for (let d = 0; d < docs + 60; d += 3) ix.remove(d);
    }
    expect(answers(loaded, docs + 60)).toBe(answers(index, docs + 60));
    t2.push({ new: true }, 'ch_0000000000000000000000000abc', 1, 2, 3);
    table.push({ new: true }, 'ch_0000000000000000000000000abc', 1, 2, 3);
    expect(t2.id(table.length - 1)).toBe(table.id(table.length - 1)!);
  });

  test('duplicate groups round-trip with the index; a dump without them (no embeddings, or written before them) still reads', async () => {
    const groups = new DuplicateGroups();
    for (let d = 0; d < 50; d++) groups.join(d, d % 7, (other) => other % 7 === d % 7);
    groups.leave(3);
    const index = new InvertedIndex();
    const table = new ChunkTable<object>();
    const path = join(dir, 'groups');
    const whole = await prepareIndexDump('kb_x', 'cfg_x', { bm25: index.dump(), chunks: table.dump(), groups: groups.dump() }).write(path);
    const back = readIndexDump(path, 'kb_x', 'cfg_x', whole).groups!;
    const d = groups.dump();
    for (const k of ['next', 'prev', 'hashes', 'keyed', 'slotHash', 'slotDoc', 'used'] as const) expect(back[k]).toEqual(d[k] as never);
    expect((await roundTrip('no-groups', index, table)).dump.groups).toBeUndefined();
  });

  test('an empty index and table round-trip', async () => {
    const index = new InvertedIndex(params);
    const table = new ChunkTable<object>();
    const { dump } = await roundTrip('empty.dump', index, table);
    const loaded = new InvertedIndex(params);
    loaded.load(dump.bm25);
    expect(answers(loaded, 0)).toBe(answers(index, 0));
    loaded.add(0, { terms: ['a'], tfs: [1], length: 1 });
    expect(loaded.search(['a'], 1).map((s) => s.doc)).toEqual([0]);
  });

  test('a damaged, cut, foreign or newer dump is refused with the reason', async () => {
    const rng = new Rng(3);
    const index = new InvertedIndex(params);
    const table = new ChunkTable<object>();
    build(rng, index, table, 50);
    const { path, whole } = await roundTrip('b.dump', index, table);
    const good = readFileSync(path);

    // One byte flipped anywhere (a section, the header, padding): a checksum fails.
    for (let at = 0; at < good.length; at += 1 + (at % 97)) {
      const bad = Buffer.from(good);
      bad[at]! ^= 0x40;
      writeFileSync(path, bad);
      expect(() => readIndexDump(path, 'kb_x', 'cfg_x', whole)).toThrow();
    }
    // Within a section, even without the manifest's entry, as that section's checksum.
    const bad = Buffer.from(good);
    bad[good.length - 200]! ^= 0x01;
    writeFileSync(path, bad);
    expect(() => readIndexDump(path, 'kb_x', 'cfg_x')).toThrow(/section .* fails its checksum/);
    // The postings (read list by list) alike.
    const headerLength = good.readUInt32LE(12);
    const header = JSON.parse(good.subarray(24, 24 + headerLength).toString()) as { sections: { path: string; offset: number; bytes: number }[] };
    const postings = header.sections.find((x) => x.path === 'bm25.postingDocs')!;
    expect(postings.bytes).toBeGreaterThan(100);
    const badPostings = Buffer.from(good);
    badPostings[((24 + headerLength + 7) & ~7) + postings.offset + Math.floor(postings.bytes / 2)]! ^= 0x01;
    writeFileSync(path, badPostings);
    expect(() => readIndexDump(path, 'kb_x', 'cfg_x')).toThrow(/section bm25.postingDocs fails its checksum/);
    // Cut short.
    writeFileSync(path, good);
    truncateSync(path, statSync(path).size - 100);
    expect(() => readIndexDump(path, 'kb_x', 'cfg_x')).toThrow(/ends early/);
    // Another knowledge base's, another version's, not a dump at all.
    writeFileSync(path, good);
    expect(() => readIndexDump(path, 'kb_y', 'cfg_x')).toThrow(/holds kb_x/);
    const newer = Buffer.from(good);
    newer.writeUInt32LE(99, 8);
    writeFileSync(path, newer);
    expect(() => readIndexDump(path, 'kb_x', 'cfg_x')).toThrow(/version 99/);
    writeFileSync(path, Buffer.from('not a dump at all, just text of some length'));
    expect(() => readIndexDump(path, 'kb_x', 'cfg_x')).toThrow(/not an index dump/);
  });

  test('a dump is the index as it was when taken, however the index changes while it is written', async () => {
    const rng = new Rng(11);
    const index = new InvertedIndex(params);
    const table = new ChunkTable<object>();
    const groups = new DuplicateGroups();
    const docs = build(rng, index, table, 700);
    groups.grow(docs);
    for (let d = 0; d < docs; d++) groups.join(d, d % 50, (other) => other % 3 === d % 3);
    const before = answers(index, docs);
    const owners = Array.from({ length: table.length }, (_, d) => table.owner(d));
    const tableBefore = tableOf(table, docs);
    const groupsBefore = JSON.stringify(groups.dump());
    // Taken now (as a snapshot takes it), written below after the index changed in every way it
    // can: deletes (lists compact, flags and the document-terms offsets change in place), grouping,
    // new documents (lists and arrays grow), new duplicate-group members and removals.
    const prepared = prepareIndexDump('kb_x', 'cfg_x', { bm25: index.dump(), chunks: table.dump(), groups: groups.dump() });
    // Deletes first: before anything grows, they write into the very arrays the dump holds.
    const remove = (from: number, to: number) => {
      for (let d = from; d < to; d += 2) {
        index.remove(d);
        table.clear(d);
        groups.leave(d);
      }
    };
    remove(0, docs);
    const r = new Rng(5);
    for (let d = docs; d < docs + 200; d++) {
      index.add(d, randomDoc(r, 0));
      table.push({ late: d }, `ch_${d.toString(16).padStart(28, '0')}`, 0, 10, undefined);
      groups.grow(d + 1);
      groups.join(d, d % 50, (other) => other % 3 === d % 3);
    }
    index.group([docs, docs + 1, docs + 2], { terms: ['w0'], tfs: [1], length: 1 });
    index.settle();
    // A term new since (the terms are a JSON section, encoded when written).
    index.add(docs + 200, { terms: ['newfound'], tfs: [1], length: 1 });
    remove(docs, docs + 200);
    expect(answers(index, docs)).not.toBe(before);
    const path = join(dir, 'moving.dump');
    const whole = await prepared.write(path);
    const dump = readIndexDump(path, 'kb_x', 'cfg_x', whole);
    const loaded = new InvertedIndex(params);
    loaded.load(dump.bm25);
    expect(answers(loaded, docs)).toBe(before);
    const t2 = new ChunkTable<object>();
    t2.load(dump.chunks, owners);
    expect(tableOf(t2, docs)).toBe(tableBefore);
    expect(JSON.stringify({ ...dump.groups!, used: dump.groups!.used })).toBe(groupsBefore);
  });

  test('sections larger than the staging buffer, and many small pieces across its edges, read back whole', async () => {
    const big = Uint32Array.from({ length: 3_000_001 }, (_, i) => (i * 2654435761) >>> 0);
    const postingDocs = Array.from({ length: 20_000 }, (_, i) => Int32Array.from({ length: 1 + (i % 97) }, (_, j) => i + j));
    const empty = new InvertedIndex(params).dump();
    const value = { bm25: { ...empty, docLength: big, postingDocs }, chunks: new ChunkTable<object>().dump() };
    const path = join(dir, 'big.dump');
    const whole = await prepareIndexDump('kb_x', 'cfg_x', value).write(path);
    expect(whole.bytes).toBe(statSync(path).size);
    expect(whole.bytes).toBeGreaterThan(12_000_000);
    const back = readIndexDump(path, 'kb_x', 'cfg_x', whole).bm25;
    expect(Buffer.from(back.docLength.buffer, back.docLength.byteOffset, back.docLength.byteLength).equals(Buffer.from(big.buffer))).toBe(true);
    const docs = back.postingDocs as unknown as Int32Array;
    expect(docs.length).toBe(postingDocs.reduce((n, p) => n + p.length, 0));
    expect(docs[docs.length - 1]).toBe(19_999 + (19_999 % 97));
  });

  test('a dump refuses to be written when an array it holds was changed in place after it was taken', async () => {
    const values = new Uint32Array([1, 2, 3, 4]);
    const prepared = prepareIndexDump('kb_x', 'cfg_x', {
      bm25: { ...new InvertedIndex(params).dump(), docLength: values },
      chunks: new ChunkTable<object>().dump(),
    });
    values[2] = 99;
    await expect(prepared.write(join(dir, 'changed.dump'))).rejects.toThrow(/bm25.docLength changed while it was written/);
  });

  test('an index only loads into an empty one', () => {
    const index = new InvertedIndex(params);
    index.add(0, { terms: ['a'], tfs: [1], length: 1 });
    const other = new InvertedIndex(params);
    other.add(0, { terms: ['b'], tfs: [1], length: 1 });
    expect(() => other.load(index.dump())).toThrow(/empty index/);
  });
});

describe('index deltas', () => {
  /** Deletes every `step`-th live document from `from` (lists compact once half dead; the pool once half its bytes are). */
  const removeEvery = (index: InvertedIndex, table: ChunkTable<object>, groups: DuplicateGroups, from: number, to: number, step: number) => {
    for (let d = from; d < to; d += step)
      if (index.has(d)) {
        index.remove(d);
        table.clear(d);
        groups.leave(d);
      }
  };
  const addDocs = (index: InvertedIndex, table: ChunkTable<object>, groups: DuplicateGroups, from: number, n: number, seed: number) => {
    const r = new Rng(seed);
    for (let d = from; d < from + n; d++) {
      index.add(d, randomDoc(r, 0));
      table.push({ late: d }, r.next() < 0.1 ? `other-${d}` : `ch_${d.toString(16).padStart(28, '0')}`, 0, 10, r.next() < 0.5 ? 1 : undefined);
      groups.grow(d + 1);
      groups.join(d, d % 50, (other) => other % 3 === d % 3);
    }
    if (n >= 3) index.group([from, from + 1, from + 2], { terms: ['w0'], tfs: [1], length: 1 });
    index.settle();
    return from + n;
  };
  const setDump = (index: InvertedIndex, table: ChunkTable<object>, groups: DuplicateGroups) => ({
    bm25: index.dump(),
    chunks: table.dump(),
    groups: groups.dump(),
  });

  /** A base written whole, more changes, then the delta written and read back, applied to the base read back. */
  async function continued(
    seed: number,
    change: (index: InvertedIndex, table: ChunkTable<object>, groups: DuplicateGroups, docs: number) => number,
    items = 600,
  ) {
    const rng = new Rng(seed);
    const index = new InvertedIndex(params);
    const table = new ChunkTable<object>();
    const groups = new DuplicateGroups();
    let docs = build(rng, index, table, items);
    groups.grow(docs);
    for (let d = 0; d < docs; d++) if (index.has(d)) groups.join(d, d % 50, (other) => other % 3 === d % 3);
    const baseDump = setDump(index, table, groups);
    const mark = indexMark(baseDump);
    const basePath = join(dir, `base-${seed}.dump`);
    const baseWhole = await prepareIndexDump('kb_x', 'cfg_x', baseDump).write(basePath);
    docs = change(index, table, groups, docs);
    const delta = indexDelta(setDump(index, table, groups), mark)!;
    expect(delta).toBeDefined();
    const deltaPath = join(dir, `delta-${seed}.delta`);
    const deltaWhole = await prepareIndexDelta('kb_x', 'cfg_x', delta).write(deltaPath);
    const merged = applyIndexDelta(readIndexDump(basePath, 'kb_x', 'cfg_x', baseWhole), readIndexDelta(deltaPath, 'kb_x', 'cfg_x', deltaWhole));
    // The same bytes as a full dump of the index now, section by section.
    const fullPath = join(dir, `full-${seed}.dump`);
    const fullWhole = await prepareIndexDump('kb_x', 'cfg_x', setDump(index, table, groups)).write(fullPath);
    const full = readIndexDump(fullPath, 'kb_x', 'cfg_x', fullWhole);
    expect(JSON.stringify(sectionsOf(merged))).toBe(JSON.stringify(sectionsOf(full)));
    const loaded = new InvertedIndex(params);
    loaded.load(merged.bm25);
    expect(answers(loaded, docs)).toBe(answers(index, docs));
    const t2 = new ChunkTable<object>();
    t2.load(
      merged.chunks,
      Array.from({ length: table.length }, (_, d) => table.owner(d)),
    );
    expect(tableOf(t2, docs)).toBe(tableOf(table, docs));
    return {
      delta,
      deltaBytes: deltaWhole.bytes,
      fullBytes: fullWhole.bytes,
      index,
      table,
      groups,
      docs,
      baseDump: readIndexDump(basePath, 'kb_x', 'cfg_x', baseWhole),
    };
  }

  /** Every section of a dump as plain numbers (postings joined), to compare two dumps. */
  function sectionsOf(d: ReturnType<typeof readIndexDump>) {
    const out: Record<string, unknown> = {};
    const walk = (v: unknown, p: string) => {
      if (ArrayBuffer.isView(v)) out[p] = Array.from(v as Uint8Array);
      else if (Array.isArray(v) && v.length > 0 && ArrayBuffer.isView(v[0])) out[p] = v.flatMap((x) => Array.from(x as Uint8Array));
      else if (v && typeof v === 'object' && !Array.isArray(v)) for (const [k, x] of Object.entries(v)) walk(x, p ? `${p}.${k}` : k);
      else out[p] = v;
    };
    walk(d, '');
    return out;
  }

  test('a delta holds what was appended since its base; applied to the base it is the index as it is now', async () => {
    // Adds and a few deletes: no list compacts, every list goes on from its base.
    const few = await continued(21, (index, table, groups, docs) => {
      removeEvery(index, table, groups, 0, docs, 97);
      return addDocs(index, table, groups, docs, 60, 1);
    });
    expect(few.delta.base.rewritten.length).toBe(0);
    expect(few.delta.base.pool).toBeGreaterThan(0);
    expect(few.deltaBytes).toBeLessThan(few.fullBytes / 3);
    // Every document deleted, then more added than there were: lists and the pool (past 64 KiB)
    // compact, then grow past their base's length; they are held whole.
    const many = await continued(
      22,
      (index, table, groups, docs) => {
        removeEvery(index, table, groups, 0, docs, 1);
        return addDocs(index, table, groups, docs, docs + 500, 2);
      },
      2000,
    );
    expect(many.delta.base.rewritten.length).toBeGreaterThan(0);
    expect(many.delta.base.pool).toBe(0);
    expect(many.delta.dump.bm25.docTerms.pool.length).toBeGreaterThan(many.baseDump.bm25.docTerms.pool.length);
    // Lists compact, then grow past their length in the base (held whole all the same); the pool does not compact.
    const some = await continued(23, (index, table, groups, docs) => {
      removeEvery(index, table, groups, 0, Math.floor(docs * 0.55), 1);
      return addDocs(index, table, groups, docs, docs, 3);
    });
    const regrown = Array.from(some.delta.base.rewritten).filter((t) => some.delta.dump.bm25.listStats[4 * t]! > some.baseDump.bm25.listStats[4 * t]!);
    expect(regrown.length).toBeGreaterThan(10);
    expect(some.delta.base.pool).toBeGreaterThan(0);
  });

  test('a restart takes the dump it loaded as a base; another index, or a base it does not continue, is refused', async () => {
    const { index, table, groups, docs, baseDump } = await continued(31, (index, table, groups, docs) => addDocs(index, table, groups, docs, 40, 4));
    // The index loaded from a dump: that dump is its mark.
    const loaded = new InvertedIndex(params);
    const restored = readIndexDump(join(dir, 'full-31.dump'), 'kb_x', 'cfg_x');
    loaded.load(restored.bm25);
    const t2 = new ChunkTable<object>();
    t2.load(
      restored.chunks,
      Array.from({ length: table.length }, (_, d) => table.owner(d)),
    );
    const mark = indexMark(restored);
    for (let d = docs; d < docs + 30; d++) {
      loaded.add(d, randomDoc(new Rng(d), 0));
      t2.push({ late: d }, `ch_${d.toString(16).padStart(28, '0')}`, 0, 10, undefined);
    }
    loaded.remove(1);
    const delta = indexDelta({ bm25: loaded.dump(), chunks: t2.dump(), groups: groups.dump() }, mark)!;
    expect(delta.base.docs).toBe(docs);
    const merged = applyIndexDelta(restored, delta);
    const again = new InvertedIndex(params);
    again.load(merged.bm25);
    expect(answers(again, docs + 30)).toBe(answers(loaded, docs + 30));
    // The live index's own dump is not a delta of the restored mark, nor of another index's.
    expect(indexDelta(setDump(index, table, groups), mark)).toBeUndefined();
    expect(indexDelta({ bm25: new InvertedIndex(params).dump(), chunks: table.dump() }, indexMark(setDump(index, table, groups)))).toBeUndefined();
    // Applied to a dump other than its base: refused.
    expect(() => applyIndexDelta(baseDump, delta)).toThrow(/not the dump it continues/);
  });
});
