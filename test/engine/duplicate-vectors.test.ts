// Duplicate vectors and the HNSW graph (engine/vector/duplicate-groups.ts): documents whose
// vectors the graph sees as one are a single key of it, and a search expands a key to its group.
// Without this, a unique vector next to hundreds of identical ones (boilerplate chunks, notes a
// model cannot tell apart) was never found through the graph, even at k = 100.
import { afterAll, afterEach, describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KnowledgeBase } from '../../engine/kb/knowledge-base';
import { normalize } from '../../engine/embedding/provider';
import { DuplicateGroups } from '../../engine/vector/duplicate-groups';
import { GraphBuilder } from '../../engine/vector/graph-builder';
import { VectorIndex } from '../../engine/vector/vector-index';

let seed = 11;
const rand = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
const DIMS = 48;

const dirs: string[] = [];
const builders: GraphBuilder[] = [];
afterEach(async () => {
  for (const b of builders.splice(0)) await b.stop();
});
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function newIndex(quantization: 'f32' | 'i8' = 'f32') {
  const dir = mkdtempSync(join(tmpdir(), 'kb-dup-'));
  dirs.push(dir);
  return new VectorIndex({
    dimensions: DIMS,
    quantization,
    connectivity: 16,
    expansionAdd: 128,
    expansionSearch: 64,
    exactThreshold: 1000,
    file: join(dir, 'kb.vectors'),
  });
}

/**
 * 1,200 notes in six kinds, every note of a kind the same vector (as a tiny model gives "Note 12:
 * the car and a banana" and "Note 18: …"), and one note close to the first concept alone.
 */
function notes() {
  const concepts = Array.from({ length: 6 }, () => Float32Array.from({ length: DIMS }, rand));
  const vecs: Float32Array[] = [];
  for (let n = 0; n < 1200; n++) {
    const a = concepts[n % 6]!;
    const b = concepts[(n + 1) % 6]!;
    vecs.push(normalize(Float32Array.from({ length: DIMS }, (_, i) => a[i]! + b[i]!)));
  }
  const [car, , , other] = concepts as [Float32Array, Float32Array, Float32Array, Float32Array];
  vecs.push(normalize(Float32Array.from({ length: DIMS }, (_, i) => 2 * car[i]! + 0.3 * other[i]!)));
  return { vecs, unique: 1200, query: normalize(Float32Array.from(car)), concepts };
}

function fill(index: VectorIndex, vecs: Float32Array[]) {
  vecs.forEach((v, doc) => index.add(doc, index.quantize(v)));
}

async function workerBuilt(index: VectorIndex) {
  const kb = { vectorIndexes: () => [index] } as unknown as KnowledgeBase;
  const builder = new GraphBuilder(
    () => [kb],
    () => false,
    { handoffMs: 20 },
  );
  builders.push(builder);
  builder.schedule();
  const started = performance.now();
  while (!index.graphReady) {
    if (performance.now() - started > 60_000) throw new Error('the worker did not build the graph');
    await Bun.sleep(5);
  }
}

describe('duplicate vectors in the graph', () => {
  for (const quantization of ['f32', 'i8'] as const) {
    test(`a unique vector among identical ones is found, answers equal exact search (${quantization}, graph built here)`, () => {
      const { vecs, unique, query } = notes();
      const index = newIndex(quantization);
      fill(index, vecs);
      while (!index.buildStep(1000));
      // Six kinds plus the unique note: seven keys in the graph, not 1,201.
      expect(index.graphDocs().length).toBe(7);
      for (const k of [1, 5, 10, 100]) {
        const hits = index.search(query, k);
        expect(hits[0]!.doc).toBe(unique);
        // Ties resolve to the lowest documents, as in an exact search.
        expect(hits).toEqual(index.exact(query, k));
      }
      index.close();
    });
  }

  test('the same through a graph built by the worker', async () => {
    const { vecs, unique, query } = notes();
    const index = newIndex();
    fill(index, vecs);
    await workerBuilt(index);
    expect(index.graphDocs().length).toBe(7);
    expect(index.search(query, 5)[0]!.doc).toBe(unique);
    expect(index.search(query, 10)).toEqual(index.exact(query, 10));
  });

  test('deleting the key of a group: another member takes its place; a filter reaches members past a disallowed key', async () => {
    const { vecs, query } = notes();
    const index = newIndex();
    fill(index, vecs);
    while (!index.buildStep(1000));
    const keysBefore = new Set(index.graphDocs());
    // Delete every key but the unique note's: each group's next member becomes its key.
    for (const d of keysBefore) if (d !== 1200) index.remove(d);
    expect(index.graphPending).toBe(6);
    // Before the new keys are in the graph they are searched exactly; after, through the graph.
    expect(index.search(query, 10)).toEqual(index.exact(query, 10));
    await workerBuilt(index);
    expect(index.graphDocs().length).toBe(7);
    expect(index.search(query, 10)).toEqual(index.exact(query, 10));
    // A filter that allows only members (no key) of the "car" kind still finds them.
    const allowed = new Uint8Array(1201);
    const members = [] as number[];
    for (let d = 0; d < 1200; d++) {
      if (d % 6 === 0 && !index.graphDocs().includes(d) && index.has(d) && members.length < 50) {
        allowed[d] = 1;
        members.push(d);
      }
    }
    for (let d = 1; d < 1200; d += 6) allowed[d] = 1;
    const hits = index.search(query, 10, allowed);
    expect(hits).toEqual(index.exact(query, 10, allowed));
    expect(hits.every((h) => allowed[h.doc] === 1)).toBe(true);
    // Deleting a whole group leaves nothing of it.
    for (let d = 0; d < 1200; d += 6) index.remove(d);
    const rest = index.search(query, 100);
    expect(rest.some((h) => h.doc % 6 === 0 && h.doc < 1200)).toBe(false);
    expect(rest).toEqual(index.exact(query, 100));
    index.close();
  });

  test('a vector stored again moves to its new group', () => {
    const { vecs, concepts, query } = notes();
    const index = newIndex();
    fill(index, vecs);
    while (!index.buildStep(1000));
    // Note 1200 (unique) becomes one of the "car + banana" notes; note 0 becomes unique.
    index.add(1200, index.quantize(vecs[6]!));
    const fresh = normalize(Float32Array.from({ length: DIMS }, (_, i) => 3 * concepts[0]![i]! + 0.2 * concepts[4]![i]!));
    index.add(0, index.quantize(fresh));
    while (!index.buildStep(1000));
    expect(index.search(query, 1)[0]!.doc).toBe(0);
    expect(index.search(query, 20)).toEqual(index.exact(query, 20));
    index.close();
  });

  test('a graph saved with its keys and attached again after the vectors are reloaded answers the same', () => {
    const { vecs, query } = notes();
    const index = newIndex();
    fill(index, vecs);
    while (!index.buildStep(1000));
    for (let d = 0; d < 1200; d += 7) index.remove(d);
    while (!index.buildStep(1000));
    const path = join(dirs[dirs.length - 1]!, 'saved.graph');
    index.saveGraph(path);
    const keys = index.graphDocs();
    const again = newIndex();
    // Reloaded in document order: the groups may name other keys than before.
    for (let d = 0; d < vecs.length; d++) if (index.has(d)) again.add(d, again.quantize(vecs[d]!));
    again.attachGraph(path, keys);
    while (!again.buildStep(1000));
    for (const k of [1, 10, 100]) expect(again.search(query, k)).toEqual(index.search(query, k));
    index.close();
    again.close();
  });
});

describe('duplicate groups', () => {
  test('joins and leaves agree with a model: one key per group with members, every member visited', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 3 })), { maxLength: 300 }), (ops) => {
        const groups = new DuplicateGroups();
        const valueByDoc = new Map<number, number>(); // doc → its value (the group it belongs to)
        const keys = new Set<number>();
        for (const [add, doc, value] of ops) {
          if (valueByDoc.has(doc)) {
            const promoted = groups.leave(doc);
            keys.delete(doc);
            if (promoted !== undefined) keys.add(promoted);
            valueByDoc.delete(doc);
          }
          if (add) {
            // Values collide in the hash on purpose (value % 2): `same` tells them apart.
            const isKey = groups.join(doc, value % 2, (other) => valueByDoc.get(other) === value);
            valueByDoc.set(doc, value);
            if (isKey) keys.add(doc);
          }
        }
        const byValue = new Map<number, number[]>();
        for (const [doc, value] of valueByDoc) byValue.set(value, [...(byValue.get(value) ?? []), doc]);
        for (const [value, docs] of byValue) {
          // Each group reachable from any member holds exactly the docs of that value.
          for (const d of docs) {
            const seen: number[] = [];
            groups.visit(d, 1000, (m) => seen.push(m));
            expect(seen.sort((a, b) => a - b)).toEqual([...docs].sort((a, b) => a - b));
          }
          // At least one key among them; every key is a current doc marked as a key.
          expect(docs.some((d) => keys.has(d) && groups.isKey(d))).toBe(true);
          void value;
        }
        for (const k of keys) expect(valueByDoc.has(k) && groups.isKey(k)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  test('dumped and loaded into new groups, they go on exactly as the original through more joins and leaves', () => {
    const opArb = fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 3 }));
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 200 }), fc.array(opArb, { maxLength: 200 }), (before, after) => {
        const original = new DuplicateGroups();
        const valueByDoc = new Map<number, number>();
        const apply = (groups: DuplicateGroups[], [add, doc, value]: [boolean, number, number]) => {
          const had = valueByDoc.has(doc);
          valueByDoc.delete(doc);
          const out = groups.map((g) => [had ? g.leave(doc) : undefined, add ? g.join(doc, value % 2, (other) => valueByDoc.get(other) === value) : undefined]);
          if (add) valueByDoc.set(doc, value);
          return out;
        };
        for (const op of before) apply([original], op);
        // As an index dump carries them: copies of the arrays.
        const d = original.dump();
        const loaded = new DuplicateGroups();
        loaded.load({
          ...d,
          next: d.next.slice(),
          prev: d.prev.slice(),
          hashes: d.hashes.slice(),
          keyed: d.keyed.slice(),
          slotHash: d.slotHash.slice(),
          slotDoc: d.slotDoc.slice(),
        });
        for (const op of after) {
          const [a, b] = apply([original, loaded], op);
          expect(b).toEqual(a!);
        }
        for (const doc of valueByDoc.keys()) {
          const seen = (g: DuplicateGroups) => {
            const out: number[] = [];
            g.visit(doc, 1000, (m) => out.push(m));
            return out;
          };
          expect(seen(loaded)).toEqual(seen(original));
          expect(loaded.isKey(doc)).toBe(original.isKey(doc));
        }
      }),
      { numRuns: 300 },
    );
    const bad = new DuplicateGroups().dump();
    expect(() => new DuplicateGroups().load({ ...bad, slotDoc: new Int32Array(24), slotHash: new Uint32Array(24) })).toThrow(/malformed/);
    expect(() =>
      new DuplicateGroups().load({ ...bad, next: Int32Array.of(5), prev: Int32Array.of(0), hashes: Uint32Array.of(0), keyed: Uint8Array.of(1) }),
    ).toThrow(/links past/);
  });

  test('cleared and filled again past its first sizes: every document a key of its own', () => {
    const groups = new DuplicateGroups();
    for (let round = 0; round < 2; round++) {
      for (let d = 0; d < 5000; d++) expect(groups.join(d, Math.imul(d, 2654435761) >>> 0, () => false)).toBe(true);
      for (let d = 0; d < 5000; d += 2) expect(groups.leave(d)).toBeUndefined();
      groups.clear();
    }
  });
});
