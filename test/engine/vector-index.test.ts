import { describe, expect, test } from 'bun:test';
import { normalize } from '../../engine/embedding/provider';
import { DocSet } from '../../engine/filter/doc-set';
import { VectorIndex } from '../../engine/vector/vector-index';

let seed = 11;
const rand = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
const randomUnit = (d: number) => normalize(Float32Array.from({ length: d }, rand));
const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, v, i) => s + v * b[i]!, 0);

function build(n: number, d: number, quantization: 'f32' | 'i8', exactThreshold: number) {
  const index = new VectorIndex({ dimensions: d, quantization, connectivity: 16, expansionAdd: 128, expansionSearch: 128, exactThreshold });
  const vecs = Array.from({ length: n }, () => randomUnit(d));
  vecs.forEach((v, doc) => index.add(doc, index.quantize(v)));
  return { index, vecs };
}

describe('VectorIndex', () => {
  test('exact search returns true cosine neighbours in order', () => {
    const { index, vecs } = build(300, 32, 'f32', 10_000);
    const q = randomUnit(32);
    const hits = index.search(q, 5);
    const expected = vecs
      .map((v, doc) => ({ doc, score: dot(q, v) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, 5);
    expect(hits.map((h) => h.doc)).toEqual(expected.map((e) => e.doc));
    hits.forEach((h, i) => expect(h.score).toBeCloseTo(expected[i]!.score, 5));
    expect(index.graphReady).toBe(false);
  });

  test('the HNSW graph is built in the background; its results match exact search closely', () => {
    const { index } = build(3000, 32, 'f32', 1000);
    expect(index.graphPending).toBe(3000);
    expect(index.graphReady).toBe(false);
    while (!index.buildStep(1000));
    expect(index.graphReady).toBe(true);
    let overlap = 0;
    for (let i = 0; i < 20; i++) {
      const q = randomUnit(32);
      const approx = index.search(q, 10).map((h) => h.doc);
      const exact = index.exact(q, 10).map((h) => h.doc);
      overlap += approx.filter((d) => exact.includes(d)).length;
      // Scores are always exact cosines, whichever path found the document.
      for (const h of index.search(q, 10)) expect(h.score).toBeCloseTo(index.scoreDocs(q, [h.doc])[0]!, 6);
    }
    expect(overlap / 200).toBeGreaterThanOrEqual(0.95);
  });

  test('filters restrict the search before ranking, on both paths', () => {
    const { index } = build(3000, 16, 'f32', 1000);
    while (!index.buildStep(1000));
    const allowedDocs = [5, 77, 1500, 2999];
    const mask = new Uint8Array(3000);
    for (const d of allowedDocs) mask[d] = 1;
    const q = randomUnit(16);
    const hits = index.search(q, 3, DocSet.ofList(Uint32Array.from(allowedDocs), 3000));
    for (const h of index.search(q, 3, mask)) expect(allowedDocs).toContain(h.doc);
    expect(hits.length).toBe(3);
    for (const h of hits) expect(allowedDocs).toContain(h.doc);
    // A broad mask (half the docs) goes through HNSW and still never returns a masked doc.
    const half = new Uint8Array(3000);
    const halfDocs: number[] = [];
    for (let d = 0; d < 3000; d += 2) {
      half[d] = 1;
      halfDocs.push(d);
    }
    for (const h of index.search(q, 10, DocSet.ofList(Uint32Array.from(halfDocs), 3000))) expect(h.doc % 2).toBe(0);
    for (const h of index.search(q, 10, DocSet.ofMask(half))) expect(h.doc % 2).toBe(0);
  });

  test('removed vectors are never returned', () => {
    const { index } = build(2000, 16, 'f32', 500);
    while (!index.buildStep(1000));
    const q = randomUnit(16);
    const first = index.search(q, 5).map((h) => h.doc);
    for (const d of first) index.remove(d);
    const after = index.search(q, 5).map((h) => h.doc);
    for (const d of first) expect(after).not.toContain(d);
    expect(index.size).toBe(1995);
  });

  test('i8 vectors use a quarter of the bytes and keep cosine close', () => {
    const { index, vecs } = build(200, 64, 'i8', 10_000);
    const q = randomUnit(64);
    const [score] = index.scoreDocs(q, [7]);
    expect(score!).toBeCloseTo(dot(q, vecs[7]!), 1);
    expect(index.storedBytes([index.quantize(vecs[0]!)]).length).toBe(64);
    const f32 = new VectorIndex({ dimensions: 64, quantization: 'f32', connectivity: 16, expansionAdd: 64, expansionSearch: 64 });
    expect(f32.storedBytes([f32.quantize(vecs[0]!)]).length).toBe(256);
  });

  test('stored bytes round-trip', () => {
    for (const quantization of ['f32', 'i8'] as const) {
      const index = new VectorIndex({ dimensions: 8, quantization, connectivity: 8, expansionAdd: 16, expansionSearch: 16 });
      const stored = [randomUnit(8), randomUnit(8)].map((v) => index.quantize(v));
      const back = index.fromBytes(index.storedBytes(stored), 2);
      expect(back.map((v) => [...v])).toEqual(stored.map((v) => [...v]));
    }
  });

  test('wrong dimensions are refused', () => {
    const index = new VectorIndex({ dimensions: 8, quantization: 'f32', connectivity: 8, expansionAdd: 16, expansionSearch: 16 });
    expect(() => index.add(0, new Float32Array(7))).toThrow();
  });
});
