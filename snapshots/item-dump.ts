// Item dumps (snapshot format 4): one file per knowledge base, `items-<kbId>.dump`, holding its
// content items as the engine had them at the snapshot's sequence number (engine/kb/item-dump.ts),
// beside `texts.bin`, the text store's file their texts lie in. With the index dumps, a restart
// builds its state from these and replays no record. The file is a dump file
// (snapshots/dump-file.ts) whose header names the knowledge base.
import type { ItemDump } from '../engine';
import { prepareDumpFile, readDumpFile, type DumpFormat, type PreparedDump } from './dump-file';

/** Bumped when the sections change: a dump of another version is not used (the records are). */
export const ITEM_DUMP_VERSION = 1;

const FORMAT: DumpFormat = {
  name: 'an item dump',
  magic: 'KBITDUMP',
  version: ITEM_DUMP_VERSION,
  schema: {
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
  },
};

export const itemDumpFileName = (kbId: string) => `items-${kbId}.dump`;

/** A knowledge base's item dump, fixed now and written later (PreparedDump). */
export function prepareItemDump(dump: ItemDump): PreparedDump {
  return prepareDumpFile(FORMAT, { kbId: dump.kb.id }, dump);
}

/** Read a dump written by writeItemDump; throws with the reason when it is not a complete, intact dump of `kbId` (`options`: readDumpFile's). */
export function readItemDump(path: string, kbId: string, whole?: { bytes: number; crc32?: number }, options?: { checksums?: boolean }): ItemDump {
  const dump = readDumpFile(path, FORMAT, { kbId }, whole, options) as ItemDump;
  if (dump.kb?.id !== kbId) throw new Error(`holds the items of ${String(dump.kb?.id)}`);
  return dump;
}
