// The binary encoding of snapshot records (engine/log/codec.ts) and the streaming frame reader
// (engine/log/frame.ts): property tests against the JSON encoding and scanFrames.
import { afterAll, describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodePayload, encodePayload, encodeTextRecord, isBinaryPayload, PayloadDecoder, TermDictionary, withRecordFields } from '../../engine/log/codec';
import { encodeFrame, readFramesSync, scanFrames } from '../../engine/log/frame';

const dir = mkdtempSync(join(tmpdir(), 'codec-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const chunkArb = fc
  .record({
    id: fc.string(),
    start: fc.nat(),
    end: fc.nat(),
    page: fc.option(fc.nat(), { nil: undefined }),
    length: fc.nat(),
    pairs: fc.array(fc.tuple(fc.string({ unit: 'binary' }), fc.nat({ max: 0xffffffff })), { maxLength: 30 }),
  })
  .map(({ pairs, page, ...c }) => ({ ...c, ...(page === undefined ? {} : { page }), terms: pairs.map((p) => p[0]), tfs: pairs.map((p) => p[1]) }));

const indexedArb = fc.record({
  t: fc.constant('content.indexed' as const),
  kbId: fc.string(),
  id: fc.string(),
  version: fc.nat(),
  analyzer: fc.nat(),
  chunks: fc.array(chunkArb, { maxLength: 5 }),
  firstDoc: fc.nat(),
  configId: fc.option(fc.string(), { nil: undefined }),
  at: fc.string(),
});
const attachmentArb = fc.uint8Array({ maxLength: 64 });

/** A record as JSON gives it back (undefined fields dropped). */
const viaJson = (r: unknown) => JSON.parse(JSON.stringify(r));

describe('binary indexed records', () => {
  test('decode to what the JSON encoding decodes to, through a dictionary written before them', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(indexedArb, attachmentArb), { maxLength: 8 }), (records) => {
        const dict = new TermDictionary();
        const encoded = records.map(([r, a]) => dict.encodeIndexed(r, a)!);
        const decoder = new PayloadDecoder();
        expect(decoder.decode(dict.encode())).toBeUndefined();
        records.forEach(([r, a], i) => {
          expect(isBinaryPayload(encoded[i]!)).toBe(true);
          const json = decodePayload(encodePayload(r, a));
          const out = decoder.decode(encoded[i]!)!;
          expect(out.record).toEqual(json.record);
          expect([...out.attachment]).toEqual([...json.attachment]);
          // Compaction's view: the same record without the chunks' terms.
          const head = new PayloadDecoder().decodeHead<typeof r>(encoded[i]!)!;
          expect(head.record.chunks.map(({ terms, tfs, ...rest }) => rest)).toEqual(viaJson(r).chunks.map(({ terms, tfs, ...rest }: any) => rest));
        });
      }),
    );
  });

  test('a dictionary continued in a later payload, and fields replaced in place', () => {
    fc.assert(
      fc.property(indexedArb, indexedArb, attachmentArb, fc.nat(), (a, b, att, firstDoc) => {
        const dict = new TermDictionary();
        const pa = dict.encodeIndexed(a, att)!;
        const d1 = dict.encode();
        const afterA = dict.size;
        const pb = dict.encodeIndexed(b, att)!;
        const d2 = dict.encode(afterA);
        const decoder = new PayloadDecoder();
        decoder.decode(d1);
        expect(decoder.decode(pa)!.record).toEqual(viaJson(a));
        decoder.decode(d2);
        expect(decoder.decode(withRecordFields(pb, { firstDoc }))!.record).toEqual(viaJson({ ...b, firstDoc }));
      }),
    );
  });

  test('records that do not fit stay JSON; JSON payloads decode alike through the decoder', () => {
    const dict = new TermDictionary();
    expect(dict.encodeIndexed({ t: 'content.put' }, new Uint8Array())).toBeUndefined();
    const fractional = { t: 'content.indexed', chunks: [{ terms: ['a'], tfs: [0.5] }] };
    expect(dict.encodeIndexed(fractional, new Uint8Array())).toBeUndefined();
    expect(dict.encodeIndexed({ t: 'content.indexed', chunks: [{ terms: ['a'], tfs: [-1] }] }, new Uint8Array())).toBeUndefined();
    expect(dict.encodeIndexed({ t: 'content.indexed', chunks: [{ terms: ['a', 'b'], tfs: [1] }] }, new Uint8Array())).toBeUndefined();
    const put = { t: 'content.put', text: 'x' };
    expect(new PayloadDecoder().decode(encodePayload(put))!.record).toEqual(put);
  });

  test('a term the dictionary lacks, a dictionary out of order, and plain decodePayload of a binary payload throw', () => {
    const dict = new TermDictionary();
    const p = dict.encodeIndexed({ t: 'content.indexed', chunks: [{ id: 'c', terms: ['a', 'b'], tfs: [1, 2] }] }, new Uint8Array())!;
    expect(() => new PayloadDecoder().decode(p)).toThrow(/not in the dictionary/);
    expect(() => new PayloadDecoder().decode(dict.encode(1))).toThrow(/out of order/);
    expect(() => decodePayload(p)).toThrow(/PayloadDecoder/);
  });
});

const putArb = fc.record(
  {
    t: fc.constant('content.put' as const),
    kbId: fc.string(),
    id: fc.string(),
    version: fc.nat(),
    // Latin-1 only, any code point, and any UTF-16 code units (lone surrogates too).
    text: fc.oneof(
      fc.string({ unit: fc.integer({ min: 0, max: 0xff }).map((c) => String.fromCharCode(c)) }),
      fc.string({ unit: 'binary' }),
      fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) }),
    ),
    metadata: fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer(), fc.boolean())),
    source: fc.oneof(fc.constant({ kind: 'text' }), fc.record({ kind: fc.constant('file'), name: fc.string() })),
    pages: fc.option(fc.array(fc.nat()), { nil: undefined }),
    createdAt: fc.option(fc.string(), { nil: undefined }),
    at: fc.string(),
  },
  { requiredKeys: ['t', 'kbId', 'id', 'version', 'text', 'metadata', 'source', 'at'] },
);

describe('binary content records', () => {
  test('decode (whole or head) to what the JSON encoding decodes to, their attachment kept; fields replaced in place', () => {
    fc.assert(
      fc.property(putArb, attachmentArb, fc.nat(), (r, a, version) => {
        const encoded = encodeTextRecord(r, a)!;
        expect(isBinaryPayload(encoded)).toBe(true);
        const json = decodePayload(encodePayload(r, a));
        for (const out of [new PayloadDecoder().decode(encoded)!, new PayloadDecoder().decodeHead(encoded)!]) {
          expect(out.record).toEqual(json.record);
          expect(out.record).toEqual(viaJson(r));
          expect([...out.attachment]).toEqual([...json.attachment]);
        }
        // For a restart: the text's bytes beside a record whose own text is empty.
        const replay = new PayloadDecoder().decodeForReplay<typeof r>(encoded)!;
        expect(replay.record).toEqual(viaJson({ ...r, text: '' }));
        expect(replay.text!.toString()).toBe(r.text);
        expect(replay.text!.length).toBe(r.text.length);
        expect([...replay.attachment]).toEqual([...a]);
        const replaced = withRecordFields(encoded, { version });
        expect(isBinaryPayload(replaced)).toBe(true);
        expect(new PayloadDecoder().decode(replaced)!.record).toEqual(viaJson({ ...r, version }));
      }),
      { numRuns: 500 },
    );
  });

  test('Latin-1 text takes a byte a character; other records are not encoded; a damaged width or length throws', () => {
    const r = { t: 'content.put', kbId: 'kb', id: 'c', version: 1, text: 'café '.repeat(100), metadata: {}, source: { kind: 'text' }, at: 'now' };
    const latin = encodeTextRecord(r, new Uint8Array())!;
    const wide = encodeTextRecord({ ...r, text: 'café ☕'.repeat(100) }, new Uint8Array())!;
    expect(latin.length).toBeLessThan(encodePayload(r).length);
    expect(wide.length - latin.length).toBeGreaterThan(r.text.length);
    expect(encodeTextRecord({ t: 'content.delete' }, new Uint8Array())).toBeUndefined();
    expect(encodeTextRecord({ t: 'content.put', text: 3 }, new Uint8Array())).toBeUndefined();
    const headLen = new DataView(latin.buffer).getUint32(5, true);
    const badWidth = Uint8Array.from(latin);
    badWidth[9 + headLen] = 3;
    expect(() => new PayloadDecoder().decode(badWidth)).toThrow(/width/);
    const badLength = Uint8Array.from(latin);
    new DataView(badLength.buffer).setUint32(9 + headLen + 1, latin.length, true);
    expect(() => new PayloadDecoder().decode(badLength)).toThrow(/past the payload/);
  });
});

describe('readFramesSync', () => {
  const framesArb = fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 20 });
  let n = 0;
  test('reads what scanFrames reads, whole or cut anywhere or damaged, in any piece size', () => {
    fc.assert(
      fc.property(framesArb, fc.nat(), fc.integer({ min: 1, max: 700 }), fc.option(fc.nat(), { nil: undefined }), (payloads, cutAt, piece, flip) => {
        const whole = Buffer.concat(payloads.map((p, i) => encodeFrame(i + 1, p)));
        let bytes: Uint8Array = whole.subarray(0, whole.length === 0 ? 0 : cutAt % (whole.length + 1));
        if (flip !== undefined && bytes.length > 0) {
          bytes = Uint8Array.from(bytes);
          bytes[flip % bytes.length]! ^= 0x40;
        }
        const path = join(dir, `f${n++}`);
        writeFileSync(path, bytes);
        const scan = scanFrames(bytes);
        const seen: { seq: number; payload: number[] }[] = [];
        const read = readFramesSync(path, (seq, payload) => seen.push({ seq, payload: [...payload] }), piece);
        expect(read.ok).toBe(scan.ok);
        expect(read.end).toBe(scan.end);
        expect(read.frames).toBe(scan.frames.length);
        expect(seen).toEqual(scan.frames.map((f) => ({ seq: f.seq, payload: [...f.payload] })));
        // Asked for, the CRC32 of the intact frames' bytes, as a second read of them would give it.
        const summed = readFramesSync(path, () => {}, piece, false, true);
        expect(summed).toEqual({ ...read, crc32: Bun.hash.crc32(bytes.subarray(0, scan.end)) });
      }),
      { numRuns: 300 },
    );
  });
});
