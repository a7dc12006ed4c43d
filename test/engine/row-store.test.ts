// The stored vectors' file (engine/vector/row-store.ts): rows gathered for one write and rows
// already written read back the same, in any order of writes and reads, as the in-memory store.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
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
});
