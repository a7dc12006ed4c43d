// Index dumps (snapshot format 3): one file per index set of a knowledge base, `index-<kbId>-<configId>.dump`,
// holding its chunk table and BM25 index as the engine had them at the snapshot's sequence number,
// so a restart loads them in a few large reads instead of re-adding every chunk of the records.
// The file is a dump file (snapshots/dump-file.ts) whose header names the knowledge base and configuration.
import type { IndexSetDelta, IndexSetDump } from '../engine';
import { prepareDumpFile, readDumpFile, type DumpFormat, type Kind, type PreparedDump } from './dump-file';

/** Bumped when the sections change: a dump of another version is not used (the records are). */
export const INDEX_DUMP_VERSION = 1;

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
const FORMAT: DumpFormat = { name: 'an index dump', magic: 'KBIXDUMP', version: INDEX_DUMP_VERSION, schema: SCHEMA, optional: ['groups.'] };

export const indexDumpFileName = (kbId: string, configId: string) => `index-${kbId}-${configId}.dump`;

/**
 * An index delta (engine/kb/index-delta.ts): the sections of an index dump holding only what was
 * appended since its base (a full dump the snapshot holds too, SnapshotManifest indexes[].base),
 * and what the delta continues of the base.
 */
const DELTA_FORMAT: DumpFormat = {
  name: 'an index delta',
  magic: 'KBIXDELT',
  version: INDEX_DUMP_VERSION,
  schema: { ...SCHEMA, 'base.terms': 'number', 'base.rewritten': 'i32', 'base.docs': 'number', 'base.pool': 'number', 'base.chunks': 'number' },
  optional: ['groups.'],
};

export const indexDeltaFileName = (kbId: string, configId: string) => `index-${kbId}-${configId}.delta`;

/** An index delta, fixed now and written later (as prepareIndexDump). */
export function prepareIndexDelta(kbId: string, configId: string, delta: IndexSetDelta): PreparedDump {
  return prepareDumpFile(DELTA_FORMAT, { kbId, configId }, { ...delta.dump, base: delta.base });
}

/** Read an index delta written by prepareIndexDelta (checked as readIndexDump checks a dump). */
export function readIndexDelta(
  path: string,
  kbId: string,
  configId: string,
  whole?: { bytes: number; crc32?: number },
  options?: { checksums?: boolean },
): IndexSetDelta {
  const { base, ...dump } = readDumpFile(path, DELTA_FORMAT, { kbId, configId }, whole, options) as IndexSetDump & { base: IndexSetDelta['base'] };
  return { dump, base };
}

/** An index set's dump, fixed now and written later (PreparedDump: its arrays must not change meanwhile). */
export function prepareIndexDump(kbId: string, configId: string, dump: IndexSetDump): PreparedDump {
  return prepareDumpFile(FORMAT, { kbId, configId }, dump);
}

/**
 * Read a dump written by writeIndexDump, every section checked against its CRC32 and, given the
 * manifest's entry (`whole`), the file against its size and CRC32; throws with the reason when the
 * file is not a complete, intact dump of `kbId`'s configuration `configId` (`options`: readDumpFile's).
 */
export function readIndexDump(
  path: string,
  kbId: string,
  configId: string,
  whole?: { bytes: number; crc32?: number },
  options?: { checksums?: boolean },
): IndexSetDump {
  return readDumpFile(path, FORMAT, { kbId, configId }, whole, options) as IndexSetDump;
}
