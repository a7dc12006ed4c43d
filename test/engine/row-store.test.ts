// The stored vectors' file (engine/vector/row-store.ts): rows gathered for one write and rows
// already written read back the same, in any order of writes and reads, as the in-memory store.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { existsSync, linkSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileRows, MemoryRows } from '../../engine/vector/row-store';

const ROW = 8;
const row = (seed: number) => Uint8Array.from({ length: ROW }, (_, i) => (seed * 31 + i * 7) & 0xff);

describe('FileRows', () => {
  test('reads equal the in-memory store through any writes and reads (gathered rows included)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kb-rows-'));
    try {
      const op = fc.oneof(
        fc.record({ write: fc.integer({ min: 0, max: 300 }), seed: fc.integer({ min: 0, max: 1000 }) }),
        fc.record({ read: fc.integer({ min: 0, max: 300 }), count: fc.integer({ min: 1, max: 80 }) }),
      );
      let runs = 0;
      fc.assert(
        fc.property(fc.array(op, { minLength: 1, maxLength: 200 }), (ops) => {
          const file = new FileRows(join(dir, `rows-${runs++}`), ROW);
          const memory = new MemoryRows(ROW);
          try {
            // Mostly consecutive documents, as replay writes them: runs are gathered.
            let next = 0;
            for (const o of ops) {
              if ('write' in o) {
                const doc = o.seed % 4 === 0 ? o.write : next++;
                file.write(doc, row(o.seed));
                memory.write(doc, row(o.seed));
              } else {
                // One row first (a duplicate check reads a single row, maybe one still gathered), then a run.
                const one = new Uint8Array(ROW);
                const b = new Uint8Array(o.count * ROW);
                file.read(o.read, 1, one);
                memory.read(o.read, o.count, b);
                expect(one).toEqual(b.subarray(0, ROW));
                const a = new Uint8Array(o.count * ROW);
                file.read(o.read, o.count, a);
                expect(a).toEqual(b);
              }
            }
          } finally {
            file.close();
          }
        }),
        { numRuns: 300, seed: 20261126 },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a file taken over keeps its first rows, loses what followed them, and takes rows after them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kb-rows-'));
    try {
      const first = new FileRows(join(dir, 'a'), ROW);
      for (let d = 0; d < 10; d++) first.write(d, row(d));
      // What a snapshot links: every row written, and the file's length then.
      expect(first.written()).toBe(10 * ROW);
      first.write(10, row(99));
      first.write(11, row(98));
      expect(first.written()).toBe(12 * ROW);
      linkSync(join(dir, 'a'), join(dir, 'b'));
      first.close();
      expect(existsSync(join(dir, 'a'))).toBe(false);

      // Taken over with the snapshot's 10 rows: rows 10 and 11 were written after it and are gone.
      const next = new FileRows(join(dir, 'b'), ROW, 10);
      expect(statSync(join(dir, 'b')).size).toBe(10 * ROW);
      const out = new Uint8Array(12 * ROW);
      next.read(0, 12, out);
      const expected = new Uint8Array(12 * ROW);
      for (let d = 0; d < 10; d++) expected.set(row(d), d * ROW);
      expect(out).toEqual(expected);
      next.write(10, row(7));
      next.write(12, row(8));
      next.read(9, 4, out.subarray(0, 4 * ROW));
      expect([...out.subarray(0, 4 * ROW)]).toEqual([...row(9), ...row(7), ...new Uint8Array(ROW), ...row(8)]);
      expect(next.written()).toBe(13 * ROW);
      next.close();
      expect(existsSync(join(dir, 'b'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
