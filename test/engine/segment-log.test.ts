import { afterEach, describe, expect, test } from 'bun:test';
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeFrame, scanFrames } from '../../engine/log/frame';
import type { LogEntry } from '../../engine/log/log';
import { readLogRange } from '../../engine/log/range';
import { SegmentLog } from '../../engine/log/segment-log';
import { TestServer } from '../helpers/server';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const dirs: string[] = [];
const tempDir = () => {
  const d = TestServer.tempDir();
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function openCollect(dir: string, warnings: unknown[] = [], segmentBytes?: number, afterSeq?: number) {
  const entries: LogEntry[] = [];
  const wal = await SegmentLog.open({ dir, segmentBytes, afterSeq, log: (_level, m, d) => warnings.push({ m, ...d }) }, (e) =>
    entries.push({ seq: e.seq, payload: e.payload.slice() }),
  );
  return { wal, entries, texts: () => entries.map((e) => dec(e.payload)) };
}

describe('frames', () => {
  test('round trip and detection of short or corrupt frames', () => {
    const a = encodeFrame(1, enc('hello'));
    const b = encodeFrame(2, enc('world!'));
    const both = new Uint8Array([...a, ...b]);
    const scan = scanFrames(both);
    expect(scan.ok).toBe(true);
    expect(scan.frames.map((f) => [f.seq, dec(f.payload)])).toEqual([
      [1, 'hello'],
      [2, 'world!'],
    ]);
    for (let cut = a.length + 1; cut < both.length; cut++) {
      const torn = scanFrames(both.subarray(0, cut));
      expect(torn.ok).toBe(false);
      expect(torn.frames.length).toBe(1);
      expect(torn.end).toBe(a.length);
    }
    const flipped = both.slice();
    flipped[both.length - 2]! ^= 0x40;
    const bad = scanFrames(flipped);
    expect(bad.ok).toBe(false);
    expect(bad.ok === false && bad.reason).toBe('checksum mismatch');
  });
});

describe('SegmentLog', () => {
  test('replays appended records in order after reopening', async () => {
    const dir = tempDir();
    const first = await openCollect(dir);
    for (let i = 0; i < 50; i++) await first.wal.append(enc(`r${i}`));
    await first.wal.close();
    const second = await openCollect(dir);
    expect(second.texts()).toEqual(Array.from({ length: 50 }, (_, i) => `r${i}`));
    expect(second.entries.map((e) => e.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    await second.wal.close();
  });

  test('concurrent appends share fsyncs (group commit)', async () => {
    const dir = tempDir();
    const { wal } = await openCollect(dir);
    const seqs = await Promise.all(Array.from({ length: 200 }, (_, i) => wal.append(enc(`c${i}`))));
    expect(new Set(seqs).size).toBe(200);
    expect(wal.syncs).toBeGreaterThan(0);
    expect(wal.syncs).toBeLessThan(20);
    await wal.close();
  });

  test('a torn tail is reported, cut off, kept aside, and the log continues', async () => {
    const dir = tempDir();
    const first = await openCollect(dir);
    for (let i = 0; i < 5; i++) await first.wal.append(enc(`ok${i}`));
    await first.wal.close();
    const segment = join(dir, readdirSync(dir).find((n) => n.endsWith('.log'))!);
    const goodSize = statSync(segment).size;
    // Half of a frame, as a crash in the middle of a write leaves it.
    appendFileSync(segment, encodeFrame(6, enc('never acknowledged')).subarray(0, 11));
    const warnings: any[] = [];
    const second = await openCollect(dir, warnings);
    expect(second.texts()).toEqual(['ok0', 'ok1', 'ok2', 'ok3', 'ok4']);
    expect(warnings.length).toBe(1);
    expect(warnings[0].m).toContain('torn tail');
    expect(warnings[0].bytesCut).toBe(11);
    expect(statSync(segment).size).toBe(goodSize);
    expect(readFileSync(warnings[0].keptAt).length).toBe(11);
    await second.wal.append(enc('after'));
    await second.wal.close();
    const third = await openCollect(dir);
    expect(third.texts()).toEqual(['ok0', 'ok1', 'ok2', 'ok3', 'ok4', 'after']);
    expect(third.entries.at(-1)!.seq).toBe(6);
    await third.wal.close();
  });

  test('a corrupt last record is cut off', async () => {
    const dir = tempDir();
    const first = await openCollect(dir);
    for (let i = 0; i < 3; i++) await first.wal.append(enc(`v${i}`));
    await first.wal.close();
    const segment = join(dir, readdirSync(dir).find((n) => n.endsWith('.log'))!);
    const bytes = readFileSync(segment);
    bytes[bytes.length - 1] ^= 0xff;
    writeFileSync(segment, bytes);
    const warnings: any[] = [];
    const second = await openCollect(dir, warnings);
    expect(second.texts()).toEqual(['v0', 'v1']);
    expect(warnings[0].reason).toBe('checksum mismatch');
    await second.wal.close();
  });

  test('rolls segments and replays across them', async () => {
    const dir = tempDir();
    const first = await openCollect(dir, [], 4096);
    for (let i = 0; i < 100; i++) await first.wal.append(enc(`segment-record-${i}-${'x'.repeat(100)}`));
    await first.wal.close();
    expect(readdirSync(dir).filter((n) => n.endsWith('.log')).length).toBeGreaterThan(2);
    const second = await openCollect(dir, [], 4096);
    expect(second.entries.length).toBe(100);
    expect(second.entries.map((e) => e.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    await second.wal.close();
  });
});

describe('segments for snapshots', () => {
  test('roll closes a segment at a known sequence; range and read give its records; truncateBefore removes covered segments; afterSeq skips them on replay', async () => {
    const dir = tempDir();
    const first = await openCollect(dir);
    for (let i = 1; i <= 5; i++) await first.wal.append(enc(`a${i}`));
    const cut = await first.wal.roll();
    expect(cut).toBe(5);
    // Appends continue in the new segment while the old one is read by a snapshotter.
    const [six] = await Promise.all([first.wal.append(enc('b6')), first.wal.append(enc('b7'))]);
    expect(six).toBe(6);
    expect(first.wal.range(0, cut).files.length).toBe(1);
    const closed = first.wal.range(0, cut).files[0]!;
    const frames = scanFrames(new Uint8Array(readFileSync(closed))).frames.map((f) => f.seq);
    expect(frames).toEqual([1, 2, 3, 4, 5]);
    const ranged: number[] = [];
    await readLogRange(first.wal.range(2, 4), (e) => ranged.push(e.seq));
    expect(ranged).toEqual([3, 4]);
    // A range after the sealed segment's records holds no file.
    expect(first.wal.range(5, 5).files).toEqual([]);
    const all: number[] = [];
    await first.wal.read(3, (e) => all.push(e.seq));
    expect(all).toEqual([4, 5, 6, 7]);
    // A roll with nothing new written does not make an empty segment.
    await first.wal.roll();
    await first.wal.roll();
    expect(await first.wal.truncateBefore(5)).toBe(0);
    expect(await first.wal.truncateBefore(6)).toBe(1);
    expect(existsSync(closed)).toBe(false);
    await first.wal.close();

    const second = await openCollect(dir, [], undefined, 5);
    expect(second.texts()).toEqual(['b6', 'b7']);
    expect(await second.wal.append(enc('c8'))).toBe(8);
    await second.wal.close();
  });

  test('a roll seals exactly the records appended before it was asked, though they are not yet durable; later ones go to the next segment', async () => {
    const dir = tempDir();
    const first = await openCollect(dir);
    await first.wal.append(enc('a1'));
    // Appends in flight (none durable yet), a roll, then more appends: the roll holds the first five.
    const before = [2, 3, 4, 5].map((i) => first.wal.append(enc(`a${i}`)));
    const rolled = first.wal.roll();
    const after = [6, 7, 8].map((i) => first.wal.append(enc(`b${i}`)));
    expect(await rolled).toBe(5);
    expect(await Promise.all(before)).toEqual([2, 3, 4, 5]);
    expect(await Promise.all(after)).toEqual([6, 7, 8]);
    const closed = first.wal.range(0, 5).files;
    expect(closed.length).toBe(1);
    expect(scanFrames(new Uint8Array(readFileSync(closed[0]!))).frames.map((f) => f.seq)).toEqual([1, 2, 3, 4, 5]);
    // Two rolls asked with an append between them: each seals what came before it.
    const r1 = first.wal.roll();
    const mid = first.wal.append(enc('c9'));
    const r2 = first.wal.roll();
    expect([await r1, await r2, await mid]).toEqual([8, 9, 9]);
    expect(first.wal.range(5, 9).files.length).toBe(2);
    await first.wal.close();
    const second = await openCollect(dir);
    expect(second.entries.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    await second.wal.close();
  });

  test('segments a snapshot covers whole are not read at open; the one it ends in is, and a damaged one after it still is', async () => {
    const dir = tempDir();
    const first = await openCollect(dir);
    for (const batch of [
      ['a1', 'a2', 'a3'],
      ['b4', 'b5'],
      ['c6', 'c7'],
    ]) {
      for (const t of batch) await first.wal.append(enc(t));
      await first.wal.roll();
    }
    await first.wal.close();
    const segments = readdirSync(dir)
      .filter((n) => n.endsWith('.log'))
      .sort();
    expect(segments.length).toBeGreaterThanOrEqual(3);
    // The first segment's bytes damaged: covered by a snapshot at 4, it is never read.
    const damaged = readFileSync(join(dir, segments[0]!));
    damaged[damaged.length - 2]! ^= 0xff;
    writeFileSync(join(dir, segments[0]!), damaged);
    const warnings: unknown[] = [];
    const covered = await openCollect(dir, warnings, undefined, 4);
    expect(covered.texts()).toEqual(['b5', 'c6', 'c7']);
    expect(warnings).toEqual([]);
    expect(await covered.wal.append(enc('d8'))).toBe(8);
    await covered.wal.close();
    // From a snapshot at 2 (an older one) the damaged segment is read, and reported.
    const older = await openCollect(dir, warnings, undefined, 2);
    expect(warnings.length).toBeGreaterThan(0);
    expect(older.texts()).not.toContain('a3');
    await older.wal.close();
  });

  test('after every segment is gone, numbering continues after the snapshot', async () => {
    const dir = tempDir();
    const wal = await openCollect(dir, [], undefined, 41);
    expect(wal.entries).toEqual([]);
    expect(await wal.wal.append(enc('x'))).toBe(42);
    await wal.wal.close();
  });
});
