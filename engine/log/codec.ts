// Log payloads. Two encodings, told apart by their first four bytes:
//   JSON    [u32 JSON length][JSON record][optional binary attachment]: every record of the
//           write-ahead log, and every record of snapshots of format 1. The attachment holds bulk
//           numeric data (vectors) that JSON would bloat.
//   binary  [u32 0xFFFFFFFF][u8 kind]... : only in snapshots (format 2 on, snapshots/format.ts). A
//           JSON length can never be 0xFFFFFFFF (frames stop at MAX_FRAME_PAYLOAD), so a JSON
//           payload is never taken for a binary one. Kinds:
//     1 dictionary  [u32 first id][JSON array of terms]: terms numbered from `first id` on, for the
//                   indexed records after it in the same file.
//     2 indexed     [u32 header length][header JSON][u32 body length][body][attachment]: a
//                   `content.indexed` record whose chunks' `terms` and `tfs` are in the body as
//                   LEB128 varints — per chunk its term count, then (term id, frequency) pairs —
//                   and everything else in the header (the record with chunks lacking both fields).
//     3 text        [u32 header length][header JSON][u8 width][u32 text bytes][text][attachment]: a
//                   `content.put` record whose text is in the body as Latin-1 (width 1, when every
//                   character fits) or UTF-16LE (width 2), as the text store keeps it, and everything
//                   else in the header. A text decodes by copying its bytes: no UTF-8 decoding, no
//                   JSON string parsing (those were a quarter of a restart at 300k chunks).
// Decoding the binary kinds needs the dictionary read so far: PayloadDecoder, fed every payload of
// the file in order. The heavy part of a restart is the terms: as JSON each is a new string; here
// each chunk's terms are the dictionary's strings, shared by every chunk that has them.

import { EncodedText, isLatin1 } from '../text/encoded-text';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** First four bytes of a binary payload (u32, little-endian). */
const BINARY = 0xffffffff;
const KIND_DICTIONARY = 1;
const KIND_INDEXED = 2;
const KIND_TEXT = 3;

export function encodePayload(record: unknown, attachment?: Uint8Array): Uint8Array {
  const json = encoder.encode(JSON.stringify(record));
  const out = new Uint8Array(4 + json.length + (attachment?.length ?? 0));
  new DataView(out.buffer).setUint32(0, json.length, true);
  out.set(json, 4);
  if (attachment) out.set(attachment, 4 + json.length);
  return out;
}

const viewOf = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);

/** Whether a payload is of the binary encoding (it needs a PayloadDecoder). */
export function isBinaryPayload(payload: Uint8Array): boolean {
  return payload.length >= 5 && payload[0] === 0xff && payload[1] === 0xff && payload[2] === 0xff && payload[3] === 0xff;
}

/** Decode a JSON payload (the write-ahead log's); a binary one throws (use a PayloadDecoder). */
export function decodePayload<T>(payload: Uint8Array): { record: T; attachment: Uint8Array } {
  if (isBinaryPayload(payload)) throw new Error('a binary snapshot payload needs the dictionary before it (PayloadDecoder)');
  const len = viewOf(payload).getUint32(0, true);
  const record = JSON.parse(decoder.decode(payload.subarray(4, 4 + len))) as T;
  return { record, attachment: payload.subarray(4 + len) };
}

interface TermChunk {
  terms: string[];
  tfs: number[];
}

/** The terms of every record encoded so far, numbered in order of first use. */
export class TermDictionary {
  readonly terms: string[] = [];
  private readonly ids = new Map<string, number>();

  /** Take over the terms a decoder has read (a previous snapshot's), keeping their numbers. */
  static from(terms: readonly string[]): TermDictionary {
    const dict = new TermDictionary();
    for (const t of terms) dict.idOf(t);
    return dict;
  }

  get size(): number {
    return this.terms.length;
  }

  idOf(term: string): number {
    let id = this.ids.get(term);
    if (id === undefined) {
      id = this.terms.length;
      this.ids.set(term, id);
      this.terms.push(term);
    }
    return id;
  }

  /** A dictionary payload of the terms numbered `from` on. */
  encode(from = 0): Uint8Array {
    const json = encoder.encode(JSON.stringify(this.terms.slice(from)));
    const out = new Uint8Array(9 + json.length);
    const view = new DataView(out.buffer);
    view.setUint32(0, BINARY, true);
    out[4] = KIND_DICTIONARY;
    view.setUint32(5, from, true);
    out.set(json, 9);
    return out;
  }

  /**
   * A `content.indexed` record in the binary encoding, its terms numbered here; undefined when it
   * does not fit it (no chunks with terms and whole-number frequencies: left as JSON).
   */
  encodeIndexed(record: { t: string; chunks?: unknown }, attachment: Uint8Array): Uint8Array | undefined {
    if (record.t !== 'content.indexed' || !Array.isArray(record.chunks)) return undefined;
    const chunks = record.chunks as TermChunk[];
    for (const c of chunks) {
      if (!Array.isArray(c.terms) || !Array.isArray(c.tfs) || c.terms.length !== c.tfs.length) return undefined;
      for (let i = 0; i < c.tfs.length; i++) {
        const tf = c.tfs[i];
        if (typeof c.terms[i] !== 'string' || !Number.isInteger(tf) || tf! < 0 || tf! > 0xffffffff) return undefined;
      }
    }
    const body = new VarintWriter();
    const headChunks = chunks.map((c) => {
      body.write(c.terms.length);
      for (let i = 0; i < c.terms.length; i++) {
        body.write(this.idOf(c.terms[i]!));
        body.write(c.tfs[i]!);
      }
      const { terms: _terms, tfs: _tfs, ...rest } = c;
      return rest;
    });
    const head = encoder.encode(JSON.stringify({ ...record, chunks: headChunks }));
    const bodyBytes = body.bytes();
    const out = new Uint8Array(13 + head.length + bodyBytes.length + attachment.length);
    const view = new DataView(out.buffer);
    view.setUint32(0, BINARY, true);
    out[4] = KIND_INDEXED;
    view.setUint32(5, head.length, true);
    out.set(head, 9);
    view.setUint32(9 + head.length, bodyBytes.length, true);
    out.set(bodyBytes, 13 + head.length);
    out.set(attachment, 13 + head.length + bodyBytes.length);
    return out;
  }
}

/**
 * A `content.put` record in the binary encoding (its text as Latin-1 or UTF-16LE bytes); undefined
 * for any other record (left as it is).
 */
export function encodeTextRecord(record: { t: string; text?: unknown }, attachment: Uint8Array): Uint8Array | undefined {
  if (record.t !== 'content.put' || typeof record.text !== 'string') return undefined;
  const { text, ...rest } = record;
  const head = encoder.encode(JSON.stringify(rest));
  const wide = !isLatin1(text);
  const textBytes = Buffer.from(text, wide ? 'utf16le' : 'latin1');
  const out = new Uint8Array(9 + head.length + 5 + textBytes.length + attachment.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, BINARY, true);
  out[4] = KIND_TEXT;
  view.setUint32(5, head.length, true);
  out.set(head, 9);
  let pos = 9 + head.length;
  out[pos] = wide ? 2 : 1;
  view.setUint32(pos + 1, textBytes.length, true);
  pos += 5;
  out.set(textBytes, pos);
  out.set(attachment, pos + textBytes.length);
  return out;
}

class VarintWriter {
  private buf = new Uint8Array(1024);
  private pos = 0;

  write(n: number): void {
    if (this.pos + 5 > this.buf.length) {
      const grown = new Uint8Array(this.buf.length * 2);
      grown.set(this.buf);
      this.buf = grown;
    }
    while (n >= 0x80) {
      this.buf[this.pos++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[this.pos++] = n;
  }

  bytes(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
}

/**
 * Decodes the payloads of one file in order, either encoding: dictionary payloads extend the
 * dictionary (and decode to undefined), binary indexed records take their terms from it.
 */
export class PayloadDecoder {
  readonly terms: string[] = [];

  /** The record and its attachment; undefined for a dictionary payload (not a record). */
  decode<T>(payload: Uint8Array): { record: T; attachment: Uint8Array } | undefined {
    return this.read<T>(payload, true);
  }

  /**
   * As decode(), but an indexed record's chunks come without `terms` and `tfs` (what compaction
   * reads: the body is not decoded).
   */
  decodeHead<T>(payload: Uint8Array): { record: T; attachment: Uint8Array } | undefined {
    return this.read<T>(payload, false);
  }

  /**
   * As decodeHead(), but the text of a binary content record comes as its bytes (`text`, a view of
   * the payload) and the record's own `text` is empty: a restart hands them to the text store as
   * they are, never making a string of them.
   */
  decodeForReplay<T>(payload: Uint8Array): { record: T; attachment: Uint8Array; text?: EncodedText } | undefined {
    if (isBinaryPayload(payload) && payload[4] === KIND_TEXT) return readText<T>(payload, viewOf(payload), false);
    return this.read<T>(payload, false);
  }

  private read<T>(payload: Uint8Array, withTerms: boolean): { record: T; attachment: Uint8Array } | undefined {
    if (!isBinaryPayload(payload)) return decodePayload<T>(payload);
    const view = viewOf(payload);
    const kind = payload[4];
    if (kind === KIND_DICTIONARY) {
      const from = view.getUint32(5, true);
      if (from !== this.terms.length) throw new Error(`term dictionary out of order: terms from ${from} after ${this.terms.length}`);
      for (const t of JSON.parse(decoder.decode(payload.subarray(9))) as string[]) this.terms.push(t);
      return undefined;
    }
    if (kind === KIND_TEXT) return readText<T>(payload, view, true);
    if (kind !== KIND_INDEXED) throw new Error(`unknown binary payload kind ${kind}`);
    const headLen = view.getUint32(5, true);
    const record = JSON.parse(decoder.decode(payload.subarray(9, 9 + headLen))) as { chunks: TermChunk[] };
    const bodyStart = 13 + headLen;
    const bodyEnd = bodyStart + view.getUint32(9 + headLen, true);
    if (withTerms) this.readBody(payload, bodyStart, bodyEnd, record.chunks);
    return { record: record as T, attachment: payload.subarray(bodyEnd) };
  }

  private readBody(b: Uint8Array, start: number, end: number, chunks: TermChunk[]): void {
    const dict = this.terms;
    let pos = start;
    // LEB128, inlined (this loop runs once per term of every chunk at start-up): one byte is the
    // common case, longer ones go through varintAt.
    for (const c of chunks) {
      let count = b[pos++]!;
      if (count >= 0x80) [count, pos] = varintAt(b, pos - 1);
      const terms = new Array<string>(count);
      const tfs = new Array<number>(count);
      for (let i = 0; i < count; i++) {
        let id = b[pos++]!;
        if (id >= 0x80) [id, pos] = varintAt(b, pos - 1);
        let tf = b[pos++]!;
        if (tf >= 0x80) [tf, pos] = varintAt(b, pos - 1);
        const term = dict[id];
        if (term === undefined) throw new Error(`term ${id} is not in the dictionary (${dict.length} terms)`);
        terms[i] = term;
        tfs[i] = tf;
      }
      c.terms = terms;
      c.tfs = tfs;
    }
    if (pos !== end) throw new Error(`indexed record body: ${end - pos} bytes unread`);
  }
}

/** A binary `content.put` record: its header with the text put back (`asString`), or with the text's bytes beside it. */
function readText<T>(payload: Uint8Array, view: DataView, asString: boolean): { record: T; attachment: Uint8Array; text?: EncodedText } {
  const headLen = view.getUint32(5, true);
  const record = JSON.parse(decoder.decode(payload.subarray(9, 9 + headLen))) as { text: string };
  const at = 9 + headLen;
  const width = payload[at];
  if (width !== 1 && width !== 2) throw new Error(`text record: unknown width ${width}`);
  const textStart = at + 5;
  const textEnd = textStart + view.getUint32(at + 1, true);
  if (textEnd > payload.length) throw new Error('text record: the text runs past the payload');
  const bytes = payload.subarray(textStart, textEnd);
  if (width === 2 && bytes.length % 2 !== 0) throw new Error('text record: a UTF-16 text of an odd length');
  const text = new EncodedText(bytes, width === 2);
  record.text = asString ? text.toString() : '';
  return { record: record as T, attachment: payload.subarray(textEnd), ...(asString ? {} : { text }) };
}

/** The LEB128 number at `pos`, and the position after it. */
function varintAt(b: Uint8Array, pos: number): [number, number] {
  let n = 0;
  let scale = 1;
  let byte: number;
  do {
    byte = b[pos++]!;
    n += (byte & 0x7f) * scale;
    scale *= 128;
  } while (byte >= 0x80);
  return [n, pos];
}

/**
 * The same payload with fields of its record replaced (compaction settling a version or document
 * number), in its own encoding: a binary record keeps its body and attachment.
 */
export function withRecordFields(payload: Uint8Array, fields: Record<string, unknown>): Uint8Array {
  if (!isBinaryPayload(payload)) {
    const { record, attachment } = decodePayload<object>(payload);
    return encodePayload({ ...record, ...fields }, attachment.length > 0 ? attachment : undefined);
  }
  // Both binary record kinds start [kind][u32 header length][header JSON]; the rest is kept.
  if (payload[4] !== KIND_INDEXED && payload[4] !== KIND_TEXT) throw new Error('only a record has fields to replace');
  const view = viewOf(payload);
  const headLen = view.getUint32(5, true);
  const head = encoder.encode(JSON.stringify({ ...JSON.parse(decoder.decode(payload.subarray(9, 9 + headLen))), ...fields }));
  const rest = payload.subarray(9 + headLen);
  const out = new Uint8Array(9 + head.length + rest.length);
  out.set(payload.subarray(0, 5));
  new DataView(out.buffer).setUint32(5, head.length, true);
  out.set(head, 9);
  out.set(rest, 9 + head.length);
  return out;
}
