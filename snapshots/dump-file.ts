// Dump files of a snapshot: an object of typed arrays, JSON values and numbers, written as sections
// so that a restart reads each back in one large read (index dumps, item dumps). Layout (little-endian):
//   [8 magic][u32 version][u32 header length][u32 header CRC32][u32 0][header JSON][0-padding to 8]
//   sections, each at an offset that is a multiple of 8, in the header's order
// The header holds the dump's identity (which knowledge base, which configuration), the scalars,
// and every section's path in the object, type, offset, bytes and CRC32. Each section is read into
// an array of its own (aligned, none kept alive by another) and checked against its CRC32, or the
// whole file against the manifest's: a dump that fails any check is not used, and the records
// (which still hold everything) are replayed instead.
import { closeSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { PRIVATE_FILE } from '../engine';

const PREFIX_BYTES = 24;
/**
 * Every piece is copied into a buffer of this many bytes, written when full: small pieces (most
 * posting lists) make large writes, and what is written is what was checked (PreparedDump).
 */
const STAGE_BYTES = 4 << 20;
/**
 * Staging buffers written at once: a write to fresh page cache pays a page fault per 4 KiB (about
 * 12 µs each on this virtual machine), which writes in flight together pay side by side. A scratch
 * probe at a million chunks wrote the 662 MB index dump, 8 times each way, in 0.47–1.80 s (median
 * 1.1 s) one stage at a time, 0.47–1.02 s (median 0.93 s) three at a time, never slower in a pair.
 */
const STAGES_IN_FLIGHT = 3;

export type Kind = 'i32' | 'u32' | 'u8' | 'f64' | 'json' | 'number';
const ARRAYS = { i32: Int32Array, u32: Uint32Array, u8: Uint8Array, f64: Float64Array } as const;

/** One kind of dump file: what it is called, its version, and every field by path (all that is accepted when read). */
export interface DumpFormat {
  /** What the file is, for messages: 'an index dump'. */
  name: string;
  magic: string;
  version: number;
  schema: Record<string, Kind>;
  /** Path prefixes of fields a dump may lack, each group all or none. */
  optional?: string[];
}

interface Section {
  path: string;
  kind: Kind;
  offset: number;
  bytes: number;
  crc32: number;
}

interface Header {
  scalars: Record<string, number>;
  sections: Section[];
  [identity: string]: unknown;
}

const get = (obj: unknown, path: string): unknown => path.split('.').reduce((o, k) => (o as Record<string, unknown> | undefined)?.[k], obj);

function set(obj: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) o = (o[k] ??= {}) as Record<string, unknown>;
  o[keys[keys.length - 1]!] = value;
}

const bytesOf = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const pad8 = (n: number) => (n + 7) & ~7;
const optionalGroup = (format: DumpFormat, path: string) => format.optional?.find((p) => path.startsWith(p));

/** A dump whose content was fixed when it was prepared (prepareDumpFile), to be written to a file. */
export interface PreparedDump {
  /**
   * Write it to `path` (a new file; the caller makes it durable), off the calling thread but for
   * copying it through a staging buffer 4 MiB at a time. Rejects when an array it holds changed
   * since it was prepared (the file would not be the state it was taken from). Resolves with its
   * size and the CRC32 of the whole file (the manifest's entry).
   */
  write(path: string): Promise<{ bytes: number; crc32: number }>;
}

/**
 * Prepare `value` as a dump of `format` with `identity` in its header: every array section's
 * checksum is taken now, over the arrays as they are (views, not copies), and write() copies them
 * out later, checking that each section still has that checksum. The caller keeps the arrays from
 * changing until then (append beyond a view, or replace an array, but never write inside one).
 * A field given as an array of arrays is written as their concatenation. JSON fields are encoded
 * by write(), each after a turn of the event loop (at a million items they took most of the
 * request thread's pause while a snapshot was taken during a load): the caller gives values
 * nothing changes afterwards (copies, or objects only ever replaced).
 */
export function prepareDumpFile(format: DumpFormat, identity: Record<string, string>, value: unknown): PreparedDump {
  const scalars: Record<string, number> = {};
  // Each array section as pieces (views: a posting list each), checksummed now; JSON ones as values.
  const parts: { path: string; kind: Kind; pieces?: Uint8Array[]; json?: unknown; crc32: number }[] = [];
  for (const [p, kind] of Object.entries(format.schema)) {
    const field = get(value, p);
    if (field === undefined && optionalGroup(format, p)) continue;
    if (kind === 'number') {
      scalars[p] = field as number;
      continue;
    }
    if (kind === 'json') {
      parts.push({ path: p, kind, json: field, crc32: 0 });
      continue;
    }
    const views = Array.isArray(field) ? field : [field];
    if (!views.every((v) => v instanceof ARRAYS[kind])) throw new Error(`${format.name}: ${p} is not a ${kind} array`);
    const pieces = views.map((v: ArrayBufferView) => bytesOf(v));
    let crc = 0;
    for (const b of pieces) crc = Bun.hash.crc32(b, crc);
    parts.push({ path: p, kind, pieces, crc32: crc });
  }
  return {
    write: async (path) => {
      const bodies: Uint8Array[][] = [];
      const sections: Section[] = [];
      let offset = 0;
      for (const part of parts) {
        let pieces = part.pieces;
        if (!pieces) {
          await new Promise((resolve) => setImmediate(resolve));
          const encoded = new TextEncoder().encode(JSON.stringify(part.json));
          part.crc32 = Bun.hash.crc32(encoded);
          pieces = [encoded];
        }
        const bytes = pieces.reduce((n, b) => n + b.length, 0);
        sections.push({ path: part.path, kind: part.kind, offset, bytes, crc32: part.crc32 });
        bodies.push(pieces);
        offset = pad8(offset + bytes);
      }
      // Section offsets count from the end of the padded header.
      const header = new TextEncoder().encode(JSON.stringify({ ...identity, scalars, sections } satisfies Header));
      const prefix = new Uint8Array(pad8(PREFIX_BYTES + header.length));
      prefix.set(new TextEncoder().encode(format.magic), 0);
      const view = new DataView(prefix.buffer);
      view.setUint32(8, format.version, true);
      view.setUint32(12, header.length, true);
      view.setUint32(16, Bun.hash.crc32(header), true);
      prefix.set(header, PREFIX_BYTES);
      return writeSections(path, format, prefix, sections, bodies);
    },
  };
}

/** The prefix and each section's pieces (zero-padded to 8), through one staging buffer, written asynchronously. */
async function writeSections(
  path: string,
  format: DumpFormat,
  prefix: Uint8Array,
  sections: readonly Section[],
  bodies: readonly Uint8Array[][],
): Promise<{ bytes: number; crc32: number }> {
  const file = await open(path, 'wx', PRIVATE_FILE);
  // Each staging buffer with its write in flight (if any); the one filled now is `stage`.
  const stages = Array.from({ length: STAGES_IN_FLIGHT }, () => ({ bytes: new Uint8Array(STAGE_BYTES), writing: Promise.resolve() }));
  let current = 0;
  let stage = stages[0]!.bytes;
  let staged = 0;
  let crc = 0;
  let at = 0;
  const writeAll = async (bytes: Uint8Array, length: number, position: number) => {
    let done = 0;
    while (done < length) done += (await file.write(bytes, done, length - done, position + done)).bytesWritten;
  };
  /** Start writing the stage (the whole file's CRC32 taken in order first); go on in the next one once its write is done. */
  const flush = async () => {
    crc = Bun.hash.crc32(stage.subarray(0, staged), crc);
    const writing = writeAll(stage, staged, at);
    // Handled: its failure rejects where it is awaited (the next turn of this stage, or the end).
    writing.catch(() => {});
    stages[current]!.writing = writing;
    at += staged;
    staged = 0;
    current = (current + 1) % stages.length;
    await stages[current]!.writing;
    stage = stages[current]!.bytes;
  };
  /**
   * Copy `b` from `off` into the stage as far as it fits; returns where it stopped, and adds the
   * CRC32 of what was copied to `sectionCrc` (checked on the copy: the bytes written are the bytes checked).
   */
  let sectionCrc = 0;
  const fill = (b: Uint8Array, off: number): number => {
    const n = Math.min(b.length - off, stage.length - staged);
    stage.set(n === b.length ? b : b.subarray(off, off + n), staged);
    sectionCrc = Bun.hash.crc32(stage.subarray(staged, staged + n), sectionCrc);
    staged += n;
    return off + n;
  };
  let failure: { reason: unknown } | undefined;
  try {
    const zeros = new Uint8Array(8);
    const pieces = [[prefix], ...bodies];
    for (let i = 0; i < pieces.length; i++) {
      sectionCrc = 0;
      let bytes = 0;
      for (const b of pieces[i]!) {
        // Only a full stage waits (for its write): small pieces copy without a turn of their own.
        for (let off = 0; off < b.length; ) {
          if (staged === stage.length) await flush();
          off = fill(b, off);
        }
        bytes += b.length;
      }
      const section = sections[i - 1];
      if (section && sectionCrc !== section.crc32) throw new Error(`${format.name}: ${section.path} changed while it was written`);
      if (bytes % 8 !== 0) {
        if (staged + 8 > stage.length) await flush();
        fill(zeros.subarray(0, 8 - (bytes % 8)), 0);
      }
    }
    await flush();
  } catch (err) {
    failure = { reason: err };
  }
  // Every write settled before the file is closed; the first failure is the answer.
  const settled = await Promise.allSettled(stages.map((s) => s.writing));
  await file.close();
  failure ??= settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
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
 * Read a dump written by prepareDumpFile, every section checked against its CRC32 and, given the
 * manifest's entry (`whole`), the file against its size and CRC32; throws with the reason when the
 * file is not a complete, intact dump of `format` with `identity`. `checksums: false`: only the
 * header's is checked (the caller has the whole file's checked elsewhere before using the dump).
 */
export function readDumpFile(
  path: string,
  format: DumpFormat,
  identity: Record<string, string>,
  whole?: { bytes: number; crc32?: number },
  { checksums = true }: { checksums?: boolean } = {},
): unknown {
  const fd = openSync(path, 'r');
  try {
    // The whole file's CRC32 (the manifest's), summed over everything read: prefix, header and
    // sections each with its padding, in file order.
    let crc = 0;
    let at = 0;
    const read = (into: Uint8Array) => {
      readExactly(fd, into, at, path);
      at += into.length;
      if (checksums) crc = Bun.hash.crc32(into, crc);
    };
    const prefix = new Uint8Array(PREFIX_BYTES);
    read(prefix);
    if (new TextDecoder().decode(prefix.subarray(0, 8)) !== format.magic) throw new Error(`not ${format.name}`);
    const view = new DataView(prefix.buffer);
    const version = view.getUint32(8, true);
    if (version !== format.version) throw new Error(`version ${version}, this server reads ${format.version}`);
    const headerLength = view.getUint32(12, true);
    const headerPadded = new Uint8Array(pad8(PREFIX_BYTES + headerLength) - PREFIX_BYTES);
    read(headerPadded);
    const headerBytes = headerPadded.subarray(0, headerLength);
    if (Bun.hash.crc32(headerBytes) !== view.getUint32(16, true)) throw new Error('header fails its checksum');
    const header = JSON.parse(new TextDecoder().decode(headerBytes)) as Header;
    for (const [k, v] of Object.entries(identity)) if (header[k] !== v) throw new Error(`holds ${String(header[k])} as its ${k}, not ${v}`);
    const start = pad8(PREFIX_BYTES + headerBytes.length);
    const out: Record<string, unknown> = {};
    const seen = new Set<string>();
    for (const s of header.sections) {
      const kind = format.schema[s.path];
      if (kind !== s.kind || kind === 'number' || seen.has(s.path)) throw new Error(`unexpected section ${s.path} (${s.kind})`);
      seen.add(s.path);
      if (start + s.offset !== at) throw new Error(`section ${s.path} is out of place`);
      const padded = new Uint8Array(pad8(s.bytes));
      read(padded);
      const body = padded.subarray(0, s.bytes);
      // With the manifest's CRC32 of the whole file (checked below) a second pass over each section is not needed.
      if (checksums && whole?.crc32 === undefined && Bun.hash.crc32(body) !== s.crc32) throw new Error(`section ${s.path} fails its checksum`);
      if (kind === 'json') set(out, s.path, JSON.parse(new TextDecoder().decode(body)));
      else {
        const T = ARRAYS[kind];
        if (s.bytes % T.BYTES_PER_ELEMENT !== 0) throw new Error(`section ${s.path} has ${s.bytes} bytes`);
        set(out, s.path, new T(padded.buffer, 0, s.bytes / T.BYTES_PER_ELEMENT));
      }
    }
    const present = new Set(header.sections.map((s) => optionalGroup(format, s.path)).filter((g) => g !== undefined));
    for (const [p, kind] of Object.entries(format.schema)) {
      const group = optionalGroup(format, p);
      if (group !== undefined && !present.has(group)) continue;
      if (kind === 'number') {
        const v = header.scalars[p];
        if (typeof v !== 'number') throw new Error(`scalar ${p} is missing`);
        set(out, p, v);
      } else if (!seen.has(p)) throw new Error(`section ${p} is missing`);
    }
    if (whole) {
      if (at !== whole.bytes) throw new Error(`${whole.bytes} bytes expected, ${at} in its sections`);
      if (checksums && whole.crc32 !== undefined && crc !== whole.crc32) throw new Error('fails its checksum');
    }
    return out;
  } finally {
    closeSync(fd);
  }
}
