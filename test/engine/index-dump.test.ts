// Index dumps (snapshots/index-dump.ts): an InvertedIndex and a ChunkTable written to a file and
// loaded back answer exactly as the originals, before and after further changes; a damaged,
// cut or foreign dump is refused.
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvertedIndex } from '../../engine/bm25/inverted-index';
import { ChunkTable } from '../../engine/kb/chunk-table';
import { DuplicateGroups } from '../../engine/vector/duplicate-groups';
import { prepareIndexDump, readIndexDump } from '../../snapshots/index-dump';
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
