// Index dumps (snapshot format 3): one file per index set of a knowledge base, `index-<kbId>-<configId>.dump`,
// holding its chunk table and BM25 index as the engine had them at the snapshot's sequence number,
// so a restart loads them in a few large reads instead of re-adding every chunk of the records.
// Layout (little-endian):
//   [8 magic][u32 version][u32 header length][u32 header CRC32][u32 0][header JSON][0-padding to 8]
//   sections, each at an offset that is a multiple of 8, in the header's order
// The header names the knowledge base and configuration, the scalars, and every section's path in
// the dump object, type, offset, bytes and CRC32. Each section is read into an array of its own
// (aligned, none kept alive by another) and checked against its CRC32, or the whole file against
// the manifest's: a dump that fails any check is not used, and the records (which still hold
// everything) are replayed in full instead.
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { PRIVATE_FILE, type IndexSetDump } from '../engine';

const MAGIC = 'KBIXDUMP';
/** Bumped when the sections change: a dump of another version is not used (the records are). */
export const INDEX_DUMP_VERSION = 1;
const PREFIX_BYTES = 24;
/** Small pieces (most posting lists) are gathered into writes of up to this many bytes. */
const STAGE_BYTES = 1 << 20;

type Kind = 'i32' | 'u32' | 'u8' | 'f64' | 'json' | 'number';
const ARRAYS = { i32: Int32Array, u32: Uint32Array, u8: Uint8Array, f64: Float64Array } as const;

/** Every field of an IndexSetDump, by path: what is written, and all that is accepted when read. */
const SCHEMA: Record<string, Kind> = {
  'bm25.counters': 'f64',
  'bm25.terms': 'json',
  'bm25.listStats': 'u32',
  'bm25.minDocLength': 'f64',
  'bm25.postingDocs': 'i32',
  'bm25.postingTfs': 'u8',
  'bm25.bigTfs': 'i32',
  'bm25.docLength': 'u32',
  'bm25.alive': 'u8',
  'bm25.groupOf': 'i32',
  'bm25.spanStart': 'i32',
  'bm25.spanEnd': 'i32',
  'bm25.docTerms.pool': 'u8',
  'bm25.docTerms.offsets': 'u32',
  'bm25.docTerms.dead': 'number',
  'bm25.memberKeys': 'i32',
  'bm25.memberOffsets': 'u32',
  'bm25.memberDocs': 'i32',
  'bm25.overlapKeys': 'i32',
  'bm25.overlapLengths': 'f64',
  'bm25.overlapOffsets': 'u32',
  'bm25.overlapIds': 'i32',
  'bm25.overlapTfs': 'i32',
  'chunks.length': 'number',
  'chunks.start': 'i32',
  'chunks.end': 'i32',
  'chunks.page': 'i32',
  'chunks.prefixCode': 'u8',
  'chunks.idBytes': 'u8',
  'chunks.prefixes': 'json',
  'chunks.otherIds': 'json',
  'groups.next': 'i32',
  'groups.prev': 'i32',
  'groups.hashes': 'u32',
  'groups.keyed': 'u8',
  'groups.slotHash': 'u32',
  'groups.slotDoc': 'i32',
  'groups.used': 'number',
};
/** Sections a dump may lack (a set without embeddings, and dumps written before them): all of `groups`, or none. */
const OPTIONAL = 'groups.';

interface Section {
  path: string;
  kind: Kind;
  offset: number;
  bytes: number;
  crc32: number;
}

interface Header {
  kbId: string;
  configId: string;
  scalars: Record<string, number>;
  sections: Section[];
}

export const indexDumpFileName = (kbId: string, configId: string) => `index-${kbId}-${configId}.dump`;

const get = (obj: unknown, path: string): unknown => path.split('.').reduce((o, k) => (o as Record<string, unknown> | undefined)?.[k], obj);

function set(obj: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) o = (o[k] ??= {}) as Record<string, unknown>;
  o[keys[keys.length - 1]!] = value;
}

const bytesOf = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const pad8 = (n: number) => (n + 7) & ~7;

/**
 * Write a dump to `path` (a new file; the caller makes it durable). Returns its size and the
 * CRC32 of the whole file (the manifest's entry).
 */
export function writeIndexDump(path: string, kbId: string, configId: string, dump: IndexSetDump): { bytes: number; crc32: number } {
  const scalars: Record<string, number> = {};
  // Each section as pieces (views of the index: a posting list each), checksummed first, since the
  // header before them lists their checksums; then copied out through one staging buffer.
  const bodies: Uint8Array[][] = [];
  const sections: Section[] = [];
  let offset = 0;
  for (const [p, kind] of Object.entries(SCHEMA)) {
    const value = get(dump, p);
    if (value === undefined && p.startsWith(OPTIONAL)) continue;
    if (kind === 'number') {
      scalars[p] = value as number;
      continue;
    }
    const views = kind === 'json' ? [new TextEncoder().encode(JSON.stringify(value))] : Array.isArray(value) ? value : [value];
    if (kind !== 'json' && !views.every((v) => v instanceof ARRAYS[kind])) throw new Error(`index dump: ${p} is not a ${kind} array`);
    const pieces = views.map((v: ArrayBufferView) => bytesOf(v));
    let bytes = 0;
    let crc = 0;
    for (const b of pieces) {
      bytes += b.length;
      crc = Bun.hash.crc32(b, crc);
    }
    sections.push({ path: p, kind, offset, bytes, crc32: crc });
    bodies.push(pieces);
    offset = pad8(offset + bytes);
  }
  // Section offsets count from the end of the padded header.
  const header = new TextEncoder().encode(JSON.stringify({ kbId, configId, scalars, sections } satisfies Header));
  const start = pad8(PREFIX_BYTES + header.length);
  const prefix = new Uint8Array(start);
  prefix.set(new TextEncoder().encode(MAGIC), 0);
  const view = new DataView(prefix.buffer);
  view.setUint32(8, INDEX_DUMP_VERSION, true);
  view.setUint32(12, header.length, true);
  view.setUint32(16, Bun.hash.crc32(header), true);
  prefix.set(header, PREFIX_BYTES);
  const fd = openSync(path, 'wx', PRIVATE_FILE);
  const stage = new Uint8Array(STAGE_BYTES);
  let staged = 0;
  let crc = 0;
  let at = 0;
  const flush = () => {
    let done = 0;
    while (done < staged) done += writeSync(fd, stage, done, staged - done, at + done);
    at += staged;
    staged = 0;
  };
  const write = (b: Uint8Array) => {
    crc = Bun.hash.crc32(b, crc);
    if (staged + b.length > stage.length) flush();
    if (b.length > stage.length) {
      let done = 0;
      while (done < b.length) done += writeSync(fd, b, done, b.length - done, at + done);
      at += b.length;
    } else {
      stage.set(b, staged);
      staged += b.length;
    }
  };
  try {
    write(prefix);
    const zeros = new Uint8Array(8);
    for (const pieces of bodies) {
      let bytes = 0;
      for (const b of pieces) {
        write(b);
        bytes += b.length;
      }
      if (bytes % 8 !== 0) write(zeros.subarray(0, 8 - (bytes % 8)));
    }
    flush();
  } finally {
    closeSync(fd);
  }
  return { bytes: at, crc32: crc };
}

function readExactly(fd: number, into: Uint8Array, position: number, path: string): void {
  let got = 0;
  while (got < into.length) {
    const n = readSync(fd, into, got, into.length - got, position + got);
    if (n <= 0) throw new Error(`${path}: ends early`);
    got += n;
  }
}

/**
 * Read a dump written by writeIndexDump, every section checked against its CRC32 and, given the
 * manifest's entry (`whole`), the file against its size and CRC32; throws with the reason when the
 * file is not a complete, intact dump of `kbId`'s configuration `configId`.
 */
export function readIndexDump(path: string, kbId: string, configId: string, whole?: { bytes: number; crc32?: number }): IndexSetDump {
  const fd = openSync(path, 'r');
  try {
    // The whole file's CRC32 (the manifest's), summed over everything read: prefix, header and
    // sections each with its padding, in file order.
    let crc = 0;
    let at = 0;
    const read = (into: Uint8Array) => {
      readExactly(fd, into, at, path);
      at += into.length;
      crc = Bun.hash.crc32(into, crc);
    };
    const prefix = new Uint8Array(PREFIX_BYTES);
    read(prefix);
    if (new TextDecoder().decode(prefix.subarray(0, 8)) !== MAGIC) throw new Error('not an index dump');
    const view = new DataView(prefix.buffer);
    const version = view.getUint32(8, true);
    if (version !== INDEX_DUMP_VERSION) throw new Error(`index dump version ${version}, this server reads ${INDEX_DUMP_VERSION}`);
    const headerLength = view.getUint32(12, true);
    const headerPadded = new Uint8Array(pad8(PREFIX_BYTES + headerLength) - PREFIX_BYTES);
    read(headerPadded);
    const headerBytes = headerPadded.subarray(0, headerLength);
    if (Bun.hash.crc32(headerBytes) !== view.getUint32(16, true)) throw new Error('header fails its checksum');
    const header = JSON.parse(new TextDecoder().decode(headerBytes)) as Header;
    if (header.kbId !== kbId || header.configId !== configId) throw new Error(`holds ${header.kbId} (configuration ${header.configId})`);
    const start = pad8(PREFIX_BYTES + headerBytes.length);
    const out: Record<string, unknown> = {};
    const seen = new Set<string>();
    for (const s of header.sections) {
      const kind = SCHEMA[s.path];
      if (kind !== s.kind || kind === 'number' || seen.has(s.path)) throw new Error(`unexpected section ${s.path} (${s.kind})`);
      seen.add(s.path);
      if (start + s.offset !== at) throw new Error(`section ${s.path} is out of place`);
      const padded = new Uint8Array(pad8(s.bytes));
      read(padded);
      const body = padded.subarray(0, s.bytes);
      // With the manifest's CRC32 of the whole file (checked below) a second pass over each section is not needed.
      if (whole?.crc32 === undefined && Bun.hash.crc32(body) !== s.crc32) throw new Error(`section ${s.path} fails its checksum`);
      if (kind === 'json') set(out, s.path, JSON.parse(new TextDecoder().decode(body)));
      else {
        const T = ARRAYS[kind];
        if (s.bytes % T.BYTES_PER_ELEMENT !== 0) throw new Error(`section ${s.path} has ${s.bytes} bytes`);
        set(out, s.path, new T(padded.buffer, 0, s.bytes / T.BYTES_PER_ELEMENT));
      }
    }
    const hasOptional = header.sections.some((s) => s.path.startsWith(OPTIONAL));
    for (const [p, kind] of Object.entries(SCHEMA)) {
      if (p.startsWith(OPTIONAL) && !hasOptional) continue;
      if (kind === 'number') {
        const v = header.scalars[p];
        if (typeof v !== 'number') throw new Error(`scalar ${p} is missing`);
        set(out, p, v);
      } else if (!seen.has(p)) throw new Error(`section ${p} is missing`);
    }
    if (whole) {
      if (at !== whole.bytes) throw new Error(`${whole.bytes} bytes expected, ${at} in its sections`);
      if (whole.crc32 !== undefined && crc !== whole.crc32) throw new Error('fails its checksum');
    }
    return out as unknown as IndexSetDump;
  } finally {
    closeSync(fd);
  }
}
