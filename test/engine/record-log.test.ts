// One contract, two logs: the segment log on disk (engine/log/segment-log.ts) and the memory log
// (engine/log/memory-log.ts) answer the same behavioural checks of RecordLog (engine/log/log.ts):
// numbering, reads, rolls, ranges a worker can read, truncation by whole parts, size.
import { afterEach, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { FRAME_HEADER } from '../../engine/log/frame';
import type { LogEntry, RecordLog } from '../../engine/log/log';
import { MemoryLog } from '../../engine/log/memory-log';
import { readLogRange } from '../../engine/log/range';
import { SegmentLog } from '../../engine/log/segment-log';
import { TestServer } from '../helpers/server';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const kinds: [string, (afterSeq?: number) => Promise<RecordLog>][] = [
  [
    'SegmentLog',
    async (afterSeq) => {
      const dir = TestServer.tempDir();
      dirs.push(dir);
      return SegmentLog.open({ dir, afterSeq }, () => {});
    },
  ],
  ['MemoryLog', async (afterSeq) => new MemoryLog({ afterSeq })],
];

async function readAll(log: RecordLog, afterSeq = 0): Promise<[number, string][]> {
  const out: [number, string][] = [];
  await log.read(afterSeq, (e) => out.push([e.seq, dec(e.payload)]));
  return out;
}

describe.each(kinds)('%s', (_name, open) => {
  test('appends are numbered from 1 in order, concurrent ones included; read gives the records after a number', async () => {
    const log = await open();
    expect(log.lastSequence).toBe(0);
    expect(await log.append(enc('a'))).toBe(1);
    const seqs = await Promise.all(['b', 'c', 'd', 'e'].map((s) => log.append(enc(s))));
    expect(seqs).toEqual([2, 3, 4, 5]);
    expect(log.lastSequence).toBe(5);
    await log.sync();
    expect(await readAll(log)).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
      [4, 'd'],
      [5, 'e'],
    ]);
    expect(await readAll(log, 3)).toEqual([
      [4, 'd'],
      [5, 'e'],
    ]);
    expect(await readAll(log, 5)).toEqual([]);
    await log.close();
  });

  test('a record is what was appended, even when the caller reuses its buffer', async () => {
    const log = await open();
    const buffer = enc('first');
    const appended = log.append(buffer);
    buffer.set(enc('XXXXX'));
    await appended;
    expect(await readAll(log)).toEqual([[1, 'first']]);
    await log.close();
  });

  test('numbering continues after the sequence a snapshot covers', async () => {
    const log = await open(41);
    expect(log.lastSequence).toBe(41);
    expect(await log.append(enc('x'))).toBe(42);
    expect(await readAll(log)).toEqual([[42, 'x']]);
    await log.close();
  });

  test('roll seals a part; range gives its records to readLogRange while appends go on; truncateBefore drops whole parts', async () => {
    const log = await open();
    for (let i = 1; i <= 5; i++) await log.append(enc(`a${i}`));
    expect(await log.roll()).toBe(5);
    const [six, seven] = await Promise.all([log.append(enc('b6')), log.append(enc('b7'))]);
    expect([six, seven]).toEqual([6, 7]);
    const ranged: LogEntry[] = [];
    await readLogRange(log.range(2, 4), (e) => ranged.push(e));
    expect(ranged.map((e) => [e.seq, dec(e.payload)])).toEqual([
      [3, 'a3'],
      [4, 'a4'],
    ]);
    const sealed: number[] = [];
    await readLogRange(log.range(0, 5), (e) => sealed.push(e.seq));
    expect(sealed).toEqual([1, 2, 3, 4, 5]);
    // Nothing past the sealed records.
    const none: number[] = [];
    await readLogRange(log.range(5, 5), (e) => none.push(e.seq));
    expect(none).toEqual([]);
    // The range survives a trip to another thread (structured clone), as a snapshot worker takes it.
    const cloned: number[] = [];
    await readLogRange(structuredClone(log.range(0, 5)), (e) => cloned.push(e.seq));
    expect(cloned).toEqual([1, 2, 3, 4, 5]);

    expect(await log.roll()).toBe(7);
    // A roll with nothing new written makes no empty part.
    expect(await log.roll()).toBe(7);
    const framed = (n: number) => n * FRAME_HEADER;
    expect(await log.sizeBytes()).toBe(framed(7) + 5 * 2 + 2 * 2);
    // Parts [1..5] and [6..7]: below 5 nothing whole, below 6 the first part, below 8 the second.
    expect(await log.truncateBefore(5)).toBe(0);
    expect(await log.truncateBefore(6)).toBe(1);
    expect(await readAll(log)).toEqual([
      [6, 'b6'],
      [7, 'b7'],
    ]);
    expect(await log.sizeBytes()).toBe(framed(2) + 2 * 2);
    expect(await log.truncateBefore(8)).toBe(1);
    expect(await readAll(log)).toEqual([]);
    expect(await log.append(enc('c8'))).toBe(8);
    expect(await readAll(log)).toEqual([[8, 'c8']]);
    // The part appended to is never dropped.
    expect(await log.truncateBefore(100)).toBe(0);
    await log.close();
  });
});
