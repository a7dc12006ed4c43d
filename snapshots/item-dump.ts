// Item dumps (snapshot format 4): one file per knowledge base, `items-<kbId>.dump`, holding its
// content items as the engine had them at the snapshot's sequence number (engine/kb/item-dump.ts),
// beside `texts.bin`, the text store's file their texts lie in. With the index dumps, a restart
// builds its state from these and replays no record. The file is a dump file
// (snapshots/dump-file.ts) whose header names the knowledge base. `items-<kbId>.delta`: the items
// changed since a full dump the snapshot links (its manifest entry's `base`), and the ids removed.
import type { ItemDump } from '../engine';
import { prepareDumpFile, readDumpFile, type DumpFormat, type PreparedDump } from './dump-file';

/** Bumped when the sections change: a dump of another version is not used (the records are). */
export const ITEM_DUMP_VERSION = 1;

const SCHEMA: DumpFormat['schema'] = {
  'clock.ms': 'number',
  'clock.counter': 'number',
  kb: 'json',
  'items.ids': 'json',
  'items.createdAt': 'json',
  'items.updatedAt': 'json',
  'items.status': 'u8',
  'items.errors': 'json',
  'items.current': 'u32',
  'items.live': 'i32',
  'items.liveFirst': 'i32',
  'items.liveCount': 'u32',
  'items.liveVectors': 'u8',
  'versions.number': 'f64',
  'versions.metadata': 'json',
  'versions.sources': 'json',
  'versions.pages': 'json',
  'versions.textAt': 'f64',
  'versions.textChars': 'f64',
  'versions.textWide': 'u8',
  'versions.held': 'json',
};
const FORMAT: DumpFormat = { name: 'an item dump', magic: 'KBITDUMP', version: ITEM_DUMP_VERSION, schema: SCHEMA };
/** A delta is read only as one (another magic): a reader without deltas does not take it for a full dump. */
const DELTA_FORMAT: DumpFormat = { name: 'an item delta', magic: 'KBITDELT', version: ITEM_DUMP_VERSION, schema: { ...SCHEMA, 'delta.removed': 'json' } };

export const itemDumpFileName = (kbId: string) => `items-${kbId}.dump`;
export const itemDeltaFileName = (kbId: string) => `items-${kbId}.delta`;

/** A knowledge base's item dump or delta (ItemDump.delta), fixed now and written later (PreparedDump). */
export function prepareItemDump(dump: ItemDump): PreparedDump {
  return prepareDumpFile(dump.delta ? DELTA_FORMAT : FORMAT, { kbId: dump.kb.id }, dump);
}

/**
 * Read a dump written by prepareItemDump (`delta`: a delta); throws with the reason when it is not a
 * complete, intact dump of `kbId` (`options`: readDumpFile's).
 */
export function readItemDump(
  path: string,
  kbId: string,
  whole?: { bytes: number; crc32?: number },
  options?: { checksums?: boolean; delta?: boolean },
): ItemDump {
  const dump = readDumpFile(path, options?.delta ? DELTA_FORMAT : FORMAT, { kbId }, whole, options) as ItemDump;
  if (dump.kb?.id !== kbId) throw new Error(`holds the items of ${String(dump.kb?.id)}`);
  return dump;
}
