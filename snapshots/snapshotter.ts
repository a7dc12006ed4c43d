// Snapshots on local disk (DATA_DIR/snapshots): an engine opens from the newest intact one plus the
// log after it (openEngine), and the Snapshotter writes new ones while writes go on. The engine
// knows nothing of this folder: it starts from a StartingPoint, and offers what a snapshot needs
// (seal the log, read a range of it in a worker, save its graphs, truncate the log).
import { linkSync, statSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import {
  applyIndexDelta,
  applyItemDelta,
  dumpBytes,
  Engine,
  fsyncPathAsync,
  indexDelta,
  indexMark,
  PayloadDecoder,
  PRIVATE_DIR,
  readFramesSync,
  WorkerPool,
  workerUrl,
  type EngineOptions,
  type IndexMark,
  type IndexSetDump,
  type ItemMark,
  type LogRecord,
  type RestoredIndex,
  type StartingItems,
  type StartingPoint,
} from '../engine';
import type { BuildRequest, BuildResult, PartsResult } from './build';
import type { VerifyRequest, VerifyResult } from './verify';
import type { PreparedDump } from './dump-file';
import { indexDeltaFileName, indexDumpFileName, prepareIndexDelta, prepareIndexDump, readIndexDelta, readIndexDump } from './index-dump';
import { itemDeltaFileName, itemDumpFileName, prepareItemDump, readItemDump } from './item-dump';
import {
  coversShards,
  crc32File,
  fallbackOf,
  holdsRecordFile,
  listSnapshotDirs,
  readDocs,
  recordFiles,
  removeUnfinishedSnapshots,
  snapshotDirName,
  tailSnapshots,
  TEXTS_FILE,
  vectorFileName,
  verifySnapshot,
  type SnapshotManifest,
} from './format';

export interface SnapshotInfo {
  seq: number;
  dir: string;
  manifest: SnapshotManifest;
  /** Taken by this process: milliseconds per step (logged with the snapshot), not kept on disk. */
  phases?: Record<string, number>;
}

type Warn = (message: string, details: Record<string, unknown>) => void;

/**
 * A full dump a later snapshot may write a delta of: what it held (an index dump's IndexMark,
 * engine/kb/index-delta.ts; an item dump's ItemMark, engine/kb/item-dump.ts), and its file's size
 * and CRC32 (the previous snapshot holds it when its entry has these).
 */
export interface DumpBase<Mark = IndexMark> {
  mark: Mark;
  bytes: number;
  crc32: number;
}

/** The bases of deltas: index dumps by `kbId configId`, item dumps by knowledge base. */
export interface DumpBases {
  indexes: Map<string, DumpBase>;
  items: Map<string, DumpBase<ItemMark>>;
}
const noBases = (): DumpBases => ({ indexes: new Map(), items: new Map() });
const setKey = (kbId: string, configId: string) => `${kbId} ${configId}`;

/**
 * The newest intact snapshot under `root` as an engine's starting point. A snapshot that fails its
 * checks is reported and skipped for the one before it; build directories of snapshots that never
 * finished are removed first (no snapshot runs before the engine is open).
 */
export async function newestSnapshot(
  root: string,
  warn: Warn,
  info: Warn = () => {},
  /** Whether a snapshot holds every knowledge base this node needs (cluster mode with shards). */
  covers: (manifest: SnapshotManifest) => boolean = () => true,
  /** Snapshot directories found damaged while they were replayed (openEngine): not tried again. */
  skip: ReadonlySet<string> = new Set(),
  /** Snapshot directories whose item dumps failed to load (openEngine): their records are replayed. */
  noItems: ReadonlySet<string> = new Set(),
): Promise<(StartingPoint & { snapshot: SnapshotInfo; recordsCheck?: RecordsCheck; bases: DumpBases }) | undefined> {
  const unfinished = await removeUnfinishedSnapshots(root);
  if (unfinished.length > 0) info('removed unfinished snapshot directories', { removed: unfinished });
  for (const candidate of await listSnapshotDirs(root)) {
    if (skip.has(candidate.dir)) continue;
    // Record files are only size-checked here: every frame's CRC32 is checked as it is replayed,
    // and a damaged one throws DamagedSnapshot before it is applied (the files are read once).
    const check = await verifySnapshot(candidate.dir, { framed: true });
    if (!check.ok) {
      warn('snapshot skipped', { snapshot: candidate.name, reason: check.reason });
      continue;
    }
    const paths = recordFiles(check.manifest).map((name) => join(candidate.dir, name));
    const { manifest } = check;
    if (!covers(manifest)) {
      info('snapshot skipped: it lacks shards this node holds', { snapshot: candidate.name, shards: manifest.shards });
      continue;
    }
    // With item dumps, whole-file checksums run in a worker while the state loads (`checks`), and
    // the record files' after it (`recordsCheck`).
    const deferred: FileCheck[] | undefined = manifest.items && !noItems.has(candidate.dir) ? [] : undefined;
    const bases = noBases();
    const indexes = readIndexDumps(candidate.dir, manifest, candidate.name, warn, bases.indexes, deferred);
    const items = deferred && readItemDumps(candidate.dir, manifest, indexes, candidate.name, warn, deferred, bases.items);
    // No item dumps after all: the index dumps and vector files are checked here, before the records replay.
    if (deferred && !items) for (const check of deferred) if (crc32File(check.path, check.bytes) !== check.crc32) check.failed?.();
    const verified = items && verifyInWorker(candidate.dir, manifest, deferred);
    // Indexed records of a dumped set need no terms: only their head is decoded.
    const dumped = new Set(indexes.map((d) => `${d.kbId} ${d.configId}`));
    return {
      seq: manifest.seq,
      records: manifest.stats.records,
      indexes,
      bases,
      ...(items && verified ? { items, checks: verified.linked, recordsCheck: verified.records } : {}),
      replay(apply) {
        // One decoder for every file: a later one's binary records may use terms of an earlier one.
        const decoder = new PayloadDecoder();
        for (const path of paths) {
          const read = readFramesSync(
            path,
            (_, payload) => {
              let decoded = decoder.decodeForReplay<LogRecord>(payload);
              const r = decoded?.record;
              if (r?.t === 'content.indexed' && !(r.configId !== undefined && dumped.has(`${r.kbId} ${r.configId}`)))
                decoded = decoder.decode<LogRecord>(payload);
              // The attachment and text are views of the reader's buffer, valid during apply (StartingPoint.replay).
              if (decoded) apply(decoded.record, decoded.attachment, decoded.text);
            },
            reading.pieceBytes,
            reading.poison,
          );
          if (!read.ok) throw new DamagedSnapshot(candidate.dir, `${path} fails its frame checksums (${read.reason})`);
        }
      },
      graphs: manifest.graphs.map((g) => ({
        kbId: g.kbId,
        path: join(candidate.dir, g.file),
        // Absent: the graph holds exactly the vectors of the snapshot's records.
        ...(g.docs ? { docs: readDocs(join(candidate.dir, g.docs)) } : {}),
      })),
      snapshot: { seq: manifest.seq, dir: candidate.dir, manifest },
    };
  }
  return undefined;
}

/**
 * The snapshot's index dumps that read back whole and intact (a delta with its base). One that does
 * not is reported and left out: its knowledge base is rebuilt from the records instead. Each full
 * dump read is added to `bases`: the index that loads it can be dumped as a delta of it.
 */
function readIndexDumps(
  dir: string,
  manifest: SnapshotManifest,
  snapshot: string,
  warn: Warn,
  bases: DumpBases['indexes'],
  deferred?: FileCheck[],
): RestoredIndex[] {
  const out: RestoredIndex[] = [];
  const unusable = (file: string, reason: string) =>
    warn('index dump unusable; its knowledge base is rebuilt from the snapshot records', { snapshot, file, reason });
  for (const { kbId, configId, file, base, vectors } of manifest.indexes ?? []) {
    try {
      const entryOf = (name: string) => {
        const entry = manifest.files.find((f) => f.name === name);
        if (!entry) throw new Error(`${name} is not among the snapshot files`);
        return entry;
      };
      const entry = entryOf(file);
      const baseEntry = base !== undefined ? entryOf(base) : undefined;
      // Deferred: whole-file checksums go to `deferred` (read here without them).
      const checksums = deferred === undefined || entry.crc32 === undefined || (baseEntry !== undefined && baseEntry.crc32 === undefined);
      const dump: IndexSetDump = baseEntry
        ? applyIndexDelta(
            readIndexDump(join(dir, baseEntry.name), kbId, configId, baseEntry, { checksums }),
            readIndexDelta(join(dir, file), kbId, configId, entry, { checksums }),
          )
        : readIndexDump(join(dir, file), kbId, configId, entry, { checksums });
      const restored: RestoredIndex = { kbId, configId, dump, ...vectorFile(dir, manifest, vectors, snapshot, warn, deferred) };
      out.push(restored);
      const key = setKey(kbId, configId);
      if (!baseEntry && entry.crc32 !== undefined) bases.set(key, { mark: indexMark(dump), bytes: entry.bytes, crc32: entry.crc32 });
      if (!checksums)
        for (const e of baseEntry ? [entry, baseEntry] : [entry])
          deferred!.push({
            path: join(dir, e.name),
            bytes: e.bytes,
            crc32: e.crc32!,
            failed: () => {
              unusable(e.name, 'fails its checksum');
              const at = out.indexOf(restored);
              if (at >= 0) out.splice(at, 1);
              bases.delete(key);
            },
          });
    } catch (err) {
      unusable(file, err instanceof Error ? err.message : String(err));
    }
  }
  return out;
}

/**
 * The snapshot's item dumps (a delta with its base) and text file, when each reads back whole and
 * intact and so did the index dumps of every set with their vector files: the engine then starts
 * from them and replays no record. Otherwise reported, and none: the records are replayed. Each
 * full dump read is added to `bases`: the knowledge base that loads it can be dumped as a delta of it.
 */
function readItemDumps(
  dir: string,
  manifest: SnapshotManifest,
  indexes: readonly RestoredIndex[],
  snapshot: string,
  warn: Warn,
  deferred: FileCheck[],
  bases: DumpBases['items'],
): StartingItems | undefined {
  const given = manifest.items;
  if (!given) return undefined;
  try {
    for (const d of manifest.indexes ?? []) {
      const read = indexes.find((x) => x.kbId === d.kbId && x.configId === d.configId);
      if (!read) throw new Error(`the index dump of ${d.kbId} (configuration ${d.configId}) is unusable`);
      if (d.vectors && !read.vectors) throw new Error(`the vector file of ${d.kbId} (configuration ${d.configId}) is unusable`);
    }
    const linked = linkedFile(dir, manifest, given.texts, deferred);
    if ('reason' in linked) throw new Error(`${given.texts} ${linked.reason}`);
    const texts = { path: linked.path, bytes: linked.bytes };
    const found = new Map<string, DumpBase<ItemMark>>();
    const kbs = given.files.map(({ kbId, file, base }) => {
      const read = (name: string, delta: boolean) => {
        const entry = manifest.files.find((f) => f.name === name);
        if (!entry) throw new Error(`${name} is not among the snapshot files`);
        const path = join(dir, name);
        const dump = readItemDump(path, kbId, entry, { checksums: entry.crc32 === undefined, delta });
        if (entry.crc32 !== undefined) deferred.push({ path, bytes: entry.bytes, crc32: entry.crc32 });
        return { dump, entry };
      };
      const full = read(base ?? file, false);
      const dump = base ? applyItemDelta(full.dump, read(file, true).dump) : full.dump;
      // What the knowledge base loading it takes as the base of its later deltas.
      dump.mark = { of: {}, epoch: 0 };
      if (full.entry.crc32 !== undefined) found.set(kbId, { mark: dump.mark, bytes: full.entry.bytes, crc32: full.entry.crc32 });
      if (!indexes.some((x) => x.kbId === kbId && x.configId === dump.kb.config.id)) throw new Error(`${kbId} has no index dump of its configuration`);
      return dump;
    });
    for (const [kbId, base] of found) bases.set(kbId, base);
    return { kbs, texts };
  } catch (err) {
    warn('item dumps unusable; the snapshot records are replayed', { snapshot, reason: err instanceof Error ? err.message : String(err) });
    return undefined;
  }
}

/**
 * A dump's vector file when its first `bytes` are intact (CRC32): the set takes it over. One that is
 * not is reported and left out: the set stores the vectors of its records instead. `deferred`:
 * only its size is checked here, its checksum is added there (verifyInWorker).
 */
function vectorFile(
  dir: string,
  manifest: SnapshotManifest,
  name: string | undefined,
  snapshot: string,
  warn: Warn,
  deferred?: FileCheck[],
): Partial<Pick<RestoredIndex, 'vectors'>> {
  if (!name) return {};
  const unusable = (reason: string) => warn('vector file unusable; its vectors are stored again from the snapshot records', { snapshot, file: name, reason });
  const file = linkedFile(dir, manifest, name, deferred);
  if ('reason' in file) {
    unusable(file.reason);
    return {};
  }
  const { check, ...vectors } = file;
  const restored: Partial<Pick<RestoredIndex, 'vectors'>> = { vectors };
  if (check)
    check.failed = () => {
      unusable('fails its checksum');
      delete restored.vectors;
    };
  return restored;
}

/**
 * A whole-file checksum left to verifyInWorker (a linked file's, a dump's); `failed`: what to do
 * should it fail when checked here instead (the records are replayed after all).
 */
type FileCheck = { path: string; bytes: number; crc32: number; failed?: () => void };

/**
 * A file of the engine's linked into the snapshot: its first `bytes` (its files entry's) when
 * intact (CRC32), else why not. `deferred`: its checksum is added there instead of checked (and
 * returned as `check`, for what its failure would mean).
 */
function linkedFile(
  dir: string,
  manifest: SnapshotManifest,
  name: string,
  deferred?: FileCheck[],
): { path: string; bytes: number; check?: FileCheck } | { reason: string } {
  const path = join(dir, name);
  const entry = manifest.files.find((f) => f.name === name);
  const size = statSync(path, { throwIfNoEntry: false })?.size;
  const reason =
    !entry || entry.crc32 === undefined
      ? 'not among the snapshot files'
      : size === undefined
        ? 'missing'
        : size < entry.bytes
          ? `${size} bytes, expected at least ${entry.bytes}`
          : deferred === undefined && crc32File(path, entry.bytes) !== entry.crc32
            ? 'fails its checksum'
            : undefined;
  if (reason !== undefined) return { reason };
  if (!deferred) return { path, bytes: entry!.bytes };
  const check: FileCheck = { path, bytes: entry!.bytes, crc32: entry!.crc32! };
  deferred.push(check);
  return { path, bytes: entry!.bytes, check };
}

/**
 * What a start from item dumps does not read, checked in a worker (snapshots/verify.ts). First the
 * checksums of the dumps and linked files, which the state served is made of (`linked`, awaited
 * by the engine before it opens; UnusableItems: the records are replayed instead). Then the record
 * files (`records`), which a start from dumps does not need, only a later snapshot built on this
 * one, or a start that cannot use the dumps: checked after the engine opened (at 1M chunks 3.9
 * GB, about 3 s of a start from a cold page cache), DamagedSnapshot when one fails (Snapshotter).
 */
function verifyInWorker(dir: string, manifest: SnapshotManifest, files: FileCheck[]): { linked: Promise<void>; records: RecordsCheck } {
  const records = recordFiles(manifest).map((name) => {
    const entry = manifest.files.find((f) => f.name === name);
    return { path: join(dir, name), bytes: entry?.bytes ?? 0, ...(entry?.crc32 !== undefined ? { crc32: entry.crc32 } : {}) };
  });
  const pool = new WorkerPool({ size: 1, workerUrl: workerUrl('snapshot'), retries: 0 });
  const run = (verify: VerifyRequest) =>
    pool.run<VerifyResult>({ verify }).then((result) => {
      if (!result.ok) throw result.damaged === 'records' ? new DamagedSnapshot(dir, result.reason, result.path) : new UnusableItems(result.reason);
    });
  const linked = run({ records: [], linked: files.map(({ path, bytes, crc32 }) => ({ path, bytes, crc32 })) });
  const recordsChecked = linked.then(() => run({ records, linked: [] })).finally(() => pool.close());
  // Awaited by the engine and the Snapshotter; a start that fails before then leaves them unawaited.
  linked.catch(() => {});
  recordsChecked.catch(() => {});
  return { linked, records: { done: recordsChecked, cancel: () => pool.close() } };
}

/** The check of a snapshot's record files after a start from its dumps; `cancel` stops it (a start given up, a close). */
interface RecordsCheck {
  done: Promise<void>;
  cancel(): Promise<void>;
}

/**
 * The record files of the snapshot a start loaded from dumps failed their check after the engine
 * opened. The state served is whole (the dumps and linked files passed theirs), but no snapshot
 * can be built on those records: the snapshot is set aside (`damaged-snap-…`), so the next start
 * opens from the one before it and the log, as a start that found them damaged would have.
 */
export class SnapshotRecordsDamaged extends Error {
  constructor(
    readonly snapshot: string,
    readonly setAsideAt: string | undefined,
    reason: string,
  ) {
    super(`the records of snapshot ${snapshot} are damaged (${reason})`);
  }
}

/** A dump or linked file failed its checksum after the state was loaded from item dumps: the engine opens again from the records. */
class UnusableItems extends Error {}

/** How record files are read: bytes at a time (a larger frame is read whole); `poison`, see readFramesSync. */
let reading = { pieceBytes: 8 << 20, poison: false };
/** Tests: small pieces and poisoned payloads show a state that keeps views of what it is given. */
export const setSnapshotReading = (options: typeof reading) => {
  reading = options;
};

/** A snapshot's records failed their checks while they were replayed: the engine opens again without it. */
class DamagedSnapshot extends Error {
  constructor(
    readonly dir: string,
    reason: string,
    /** The damaged file, when known (it may be shared with other snapshots: hard links). */
    readonly file?: string,
  ) {
    super(reason);
  }
}

/**
 * Open an engine on its data directory: from the newest local snapshot, then the log after it. A
 * snapshot whose records turn out damaged while they are replayed is reported and skipped: the
 * engine is opened again from the one before it.
 */
export async function openEngine(options: EngineOptions): Promise<{ engine: Engine; snapshots: Snapshotter }> {
  const root = join(options.dataDir, 'snapshots');
  const say = (level: 'info' | 'warn') => (message: string, details: Record<string, unknown>) =>
    (options.log ?? ((l, m, d) => console[l](m, d ?? '')))(level, message, details);
  const damaged = new Set<string>();
  const noItems = new Set<string>();
  for (;;) {
    let latest: SnapshotInfo | undefined;
    let fromItems = false;
    let recordsCheck: RecordsCheck | undefined;
    let bases: DumpBases | undefined;
    try {
      const engine = await Engine.open({
        ...options,
        startFrom: async () => {
          const start = await newestSnapshot(root, say('warn'), say('info'), coversShards(options.cluster?.shards), damaged, noItems);
          latest = start?.snapshot;
          fromItems = start?.items !== undefined;
          recordsCheck = start?.recordsCheck;
          bases = start?.bases;
          return start;
        },
      });
      return { engine, snapshots: new Snapshotter(engine, root, latest, recordsCheck, bases) };
    } catch (err) {
      await recordsCheck?.cancel();
      // Item dumps that read back intact but do not load (they disagree with the index dumps): the
      // records are replayed instead. Any other failure then happens again without them, and is thrown.
      if (fromItems && latest && !(err instanceof DamagedSnapshot)) {
        say('warn')('item dumps unusable; the snapshot records are replayed', {
          snapshot: basename(latest.dir),
          reason: err instanceof Error ? err.message : String(err),
        });
        noItems.add(latest.dir);
        continue;
      }
      if (!(err instanceof DamagedSnapshot)) throw err;
      say('warn')('snapshot skipped', { snapshot: basename(err.dir), reason: err.message });
      damaged.add(err.dir);
    }
  }
}

/**
 * Write the engine's dumps into a snapshot being built: every index set's dump with a link to its
 * vector file, and, with `items`, every knowledge base's item dump with a link to the text store's
 * file; their manifest entries (made durable, the linked files checksummed, by the build). A set
 * whose full dump `prev` holds (`bases`) is written as a delta of it beside a link to that file,
 * while the delta is small enough (continueBase); an item dump the engine gave as a delta (of the
 * full one `prev` holds: itemMarks) likewise. The promise also gives the bases of the next
 * snapshot's deltas.
 *
 * Everything is taken before this returns its promise (each dump prepared over the arrays as they
 * are, each file linked with the length it has), so the caller may go on changing the engine: the
 * engine only appends past those arrays' ends or replaces them, and a dump whose arrays changed
 * all the same rejects (PreparedDump) rather than being written wrong. The files are then written
 * off the calling thread (at a million chunks, 757 MB: written synchronously, they held the
 * request thread 2.8-4.8 s).
 *
 * Item dumps are left out when a set's vector file could not be linked (a restart from item dumps
 * reads no vector from the records), when the base of an item delta could not be, or when the
 * engine gives none.
 */
export function writeDumps(
  dir: string,
  dumps: ReturnType<Engine['dumpIndexes']>,
  items: StartingItems | undefined,
  prev?: SnapshotInfo,
  bases?: DumpBases,
): Promise<{ indexes: NonNullable<BuildRequest['indexes']>; items?: BuildRequest['items']; bases: DumpBases }> {
  const next = noBases();
  const indexes = dumps.map(({ kbId, configId, dump, vectors }) => {
    const key = setKey(kbId, configId);
    const continued = continueBase(dir, kbId, configId, dump, prev, bases?.indexes.get(key));
    const name = continued ? indexDeltaFileName(kbId, configId) : indexDumpFileName(kbId, configId);
    const prepared = continued ? prepareIndexDelta(kbId, configId, continued.delta) : prepareIndexDump(kbId, configId, dump);
    return { kbId, configId, key, dump, name, prepared, continued, vectors: vectors && linkVectors(dir, kbId, configId, vectors, prev) };
  });
  const withItems =
    items !== undefined &&
    indexes.every((d, i) => (d.vectors !== undefined) === (dumps[i]!.vectors !== undefined)) &&
    items.kbs.every((dump) => !dump.delta || linkItemBase(dir, dump.kb.id, prev, bases?.items.get(dump.kb.id))) &&
    linkTexts(dir, items);
  const itemDumps = withItems
    ? items.kbs.map((dump) => {
        const kbId = dump.kb.id;
        const base = dump.delta ? bases!.items.get(kbId)! : undefined;
        return { kbId, dump, base, name: dump.delta ? itemDeltaFileName(kbId) : itemDumpFileName(kbId), prepared: prepareItemDump(dump) };
      })
    : [];
  const write = async (name: string, prepared: PreparedDump) => ({ name, ...(await prepared.write(join(dir, name))) });
  return (async () => {
    const indexEntries: NonNullable<BuildRequest['indexes']> = [];
    for (const d of indexes) {
      const file = await write(d.name, d.prepared);
      // A full dump is the base of the next snapshot's deltas (its size and CRC32 name its file).
      next.indexes.set(d.key, d.continued ? d.continued.base : { mark: indexMark(d.dump), bytes: file.bytes, crc32: file.crc32 });
      indexEntries.push({
        kbId: d.kbId,
        configId: d.configId,
        file,
        ...(d.continued ? { base: d.continued.file } : {}),
        ...(d.vectors ? { vectors: d.vectors } : {}),
      });
    }
    if (!withItems) return { indexes: indexEntries, bases: next };
    const files = [];
    for (const d of itemDumps) {
      const file = await write(d.name, d.prepared);
      if (d.base) {
        next.items.set(d.kbId, d.base);
        files.push({ kbId: d.kbId, file, base: { name: itemDumpFileName(d.kbId), bytes: d.base.bytes, crc32: d.base.crc32 } });
      } else {
        if (d.dump.mark) next.items.set(d.kbId, { mark: d.dump.mark, bytes: file.bytes, crc32: file.crc32 });
        files.push({ kbId: d.kbId, file });
      }
    }
    const texts = join(dir, TEXTS_FILE);
    return {
      indexes: indexEntries,
      bases: next,
      items: { files, texts: { name: TEXTS_FILE, bytes: items.texts.bytes, ...checksummed(prev, prev?.manifest.items?.texts, texts, items.texts.bytes) } },
    };
  })();
}

/** Index deltas are written while they hold at most this share of a full dump's bytes; past it, a full dump (the base of the next ones). */
const DELTA_MAX_SHARE = 0.5;

/**
 * The set's dump as a delta of `base` (a full dump of it the previous snapshot holds), that file
 * linked into `dir`; undefined when there is none to continue (no base, the previous snapshot does
 * not hold it, the set is no longer the one dumped there) or the delta would not be much smaller.
 */
function continueBase(dir: string, kbId: string, configId: string, dump: IndexSetDump, prev: SnapshotInfo | undefined, base: DumpBase | undefined) {
  if (!base || !prev) return undefined;
  const name = indexDumpFileName(kbId, configId);
  if (!holdsBase(prev, name, base)) return undefined;
  const delta = indexDelta(dump, base.mark);
  if (!delta || dumpBytes(delta.dump) > DELTA_MAX_SHARE * dumpBytes(dump)) return undefined;
  if (!tryLink(join(prev.dir, name), join(dir, name))) return undefined;
  return { delta, base, file: { name, bytes: base.bytes, crc32: base.crc32 } };
}

/** Whether `prev` holds the full dump `base` names as `name` (its entry's size and CRC32). */
const holdsBase = (prev: SnapshotInfo, name: string, base: { bytes: number; crc32: number }) =>
  prev.manifest.files.some((f) => f.name === name && f.bytes === base.bytes && f.crc32 === base.crc32);

/** Hard-link `from` as `to`; false when it cannot be (another file system, a file gone). */
function tryLink(from: string, to: string): boolean {
  try {
    linkSync(from, to);
    return true;
  } catch {
    return false;
  }
}

/**
 * The marks of the full item dumps `prev` holds (`bases`, checked against its entries): the engine
 * may give a knowledge base's items as a delta of its mark (Engine.dumpItems), written beside a
 * link to that dump (linkItemBase).
 */
export function itemMarks(prev: SnapshotInfo | undefined, bases: DumpBases | undefined): Map<string, ItemMark> {
  const marks = new Map<string, ItemMark>();
  if (!prev || !bases) return marks;
  for (const [kbId, base] of bases.items) if (holdsBase(prev, itemDumpFileName(kbId), base)) marks.set(kbId, base.mark);
  return marks;
}

/** Link the full item dump an item delta continues from `prev` into the snapshot; false when it cannot be. */
function linkItemBase(dir: string, kbId: string, prev: SnapshotInfo | undefined, base: DumpBase<ItemMark> | undefined): boolean {
  const name = itemDumpFileName(kbId);
  return prev !== undefined && base !== undefined && tryLink(join(prev.dir, name), join(dir, name));
}

/** Link a set's vector file into the snapshot: its manifest entry, or undefined when it cannot be linked. */
function linkVectors(dir: string, kbId: string, configId: string, vectors: { path: string; bytes: number }, prev?: SnapshotInfo) {
  const rows = vectorFileName(kbId, configId);
  // A link only: copying would hold this thread (a restart then stores the records' vectors).
  if (!tryLink(vectors.path, join(dir, rows))) return undefined;
  const before = prev?.manifest.indexes?.find((d) => d.kbId === kbId && d.configId === configId)?.vectors;
  return { name: rows, bytes: vectors.bytes, ...checksummed(prev, before, join(dir, rows), vectors.bytes) };
}

/** Link the text store's file into the snapshot; false when it cannot be. */
function linkTexts(dir: string, items: StartingItems): boolean {
  return tryLink(items.texts.path, join(dir, TEXTS_FILE));
}

/**
 * The previous snapshot's length and CRC32 of a linked file (`name` there), when it holds the
 * same file (a hard link to one inode) no longer than `bytes`: the next checksum continues from it.
 */
function checksummed(prev: SnapshotInfo | undefined, name: string | undefined, path: string, bytes: number): { from?: { bytes: number; crc32: number } } {
  const entry = name !== undefined ? prev!.manifest.files.find((f) => f.name === name) : undefined;
  if (!entry || entry.crc32 === undefined || entry.bytes > bytes) return {};
  const before = statSync(join(prev!.dir, name!), { throwIfNoEntry: false });
  const now = statSync(path);
  return before && before.ino === now.ino && before.dev === now.dev ? { from: { bytes: entry.bytes, crc32: entry.crc32 } } : {};
}

/** Incremental snapshots in a row before one is written whole again (compacted). */
const MAX_TAILS = 64;

/**
 * A snapshot taken while serving continues the newest one only while at most this share of the
 * records they hold would be dropped by a compaction (liveRecords): appends (a bulk load) link,
 * updates and deletes get compacted away.
 */
const DEAD_RECORDS_SHARE = 1 / 3;

/**
 * The records a compaction keeps, nearly at most: per knowledge base its creation (and a build
 * under way), per item its put and indexed records. Items still pending (one record) make it more:
 * a compaction then comes later, never needlessly.
 */
const liveRecords = ({ knowledgeBases, contents }: { knowledgeBases: number; contents: number }) => 2 * (knowledgeBases + contents);

export class Snapshotter {
  private pool: WorkerPool | undefined;
  private running: Promise<SnapshotInfo> | undefined;
  /**
   * Resolves once the record files of the snapshot the engine opened from are known intact: at
   * once, unless it opened from the snapshot's dumps, whose start checks them only after (a start
   * from a cold page cache at 1M chunks read their 3.9 GB before it was ready). Rejects with
   * SnapshotRecordsDamaged when one is not, once that snapshot is set aside; the server then exits,
   * and its restart opens from the snapshot before it. No snapshot is taken before this resolves:
   * each continues or compacts those records.
   */
  readonly recordsChecked: Promise<void>;
  private readonly cancelCheck: () => Promise<void>;
  private closing = false;
  /** The full index and item dumps the newest snapshot holds, which the next snapshot may write deltas of. */
  private bases: DumpBases;
  get dumpBases(): Readonly<DumpBases> {
    return this.bases;
  }

  constructor(
    private readonly engine: Engine,
    /** Where snapshots are kept on local disk: DATA_DIR/snapshots. */
    readonly dir: string,
    /** The newest complete snapshot on local disk. */
    public latest: SnapshotInfo | undefined,
    recordsCheck?: RecordsCheck,
    /** The full index and item dumps of `latest` the engine loaded: the next snapshot may write deltas of them. */
    bases: DumpBases = noBases(),
  ) {
    this.bases = bases;
    this.cancelCheck = recordsCheck?.cancel ?? (async () => {});
    const opened = latest;
    this.recordsChecked =
      recordsCheck && opened
        ? recordsCheck.done.catch(async (err) => {
            if (this.closing) throw err;
            throw new SnapshotRecordsDamaged(
              basename(opened.dir),
              await this.setAside(opened.dir, err instanceof DamagedSnapshot ? err.file : undefined),
              err instanceof Error ? err.message : String(err),
            );
          })
        : Promise.resolve();
    this.recordsChecked.catch(() => {});
    engine.onClose(() => this.close());
  }

  /**
   * Rename a damaged snapshot out of the newest-first list (kept for inspection); where it went, or
   * undefined when it could not be moved. The snapshots holding the damaged `file` too (a record
   * file they share: one continued the other) go with it; the restart then opens from one sharing
   * nothing (SnapshotManager keeps one, and the log after it).
   */
  private async setAside(dir: string, file?: string): Promise<string | undefined> {
    if (file !== undefined)
      for (const other of await listSnapshotDirs(this.dir)) if (other.dir !== dir && holdsRecordFile(other.dir, file)) await this.moveAside(other.dir);
    return this.moveAside(dir);
  }

  private async moveAside(dir: string): Promise<string | undefined> {
    const aside = join(this.dir, `damaged-${basename(dir)}-${Date.now()}`);
    try {
      await rename(dir, aside);
      await fsyncPathAsync(this.dir);
      return aside;
    } catch {
      return undefined;
    }
  }

  /**
   * Write a snapshot of everything logged so far, built in a worker from the previous snapshot
   * and the sealed log: writes go on meanwhile (they are held only while the log rolls to a new
   * segment). Concurrent calls share one snapshot.
   *
   * Graphs the engine serves as views of the builder's files are handed over as links, and the
   * worker need not build them again (at a million vectors, building meant a second copy of the
   * graph in memory and every insert done twice). `reuseGraphs` (for the last snapshot before
   * exit, when nothing else needs the main thread): graphs held in memory are saved too, which
   * blocks the main thread for a moment.
   *
   * `dumps` (default true): whether the snapshot may hold dumps of the engine's state (index and
   * item dumps: a restart from it replays no record). They are taken on the main thread, which
   * serves nothing meanwhile (0.55–0.74 s at a million chunks), and written off it (writeDumps):
   * SnapshotManager asks for them at shutdown and up to its dumpChunks.
   *
   * A single node's snapshot continues the newest one (its record files linked, the log since added
   * as tails: nothing decoded, compacted or built) when `continues` says so; `compact` asks for
   * one written whole all the same.
   */
  snapshot(options: { reuseGraphs?: boolean; dumps?: boolean; compact?: boolean } = {}): Promise<SnapshotInfo> {
    this.running ??= this.take(options.reuseGraphs === true, options.dumps !== false, options.compact === true).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async take(reuseGraphs: boolean, withDumps: boolean, compact: boolean): Promise<SnapshotInfo> {
    await this.recordsChecked;
    let t = performance.now();
    const steps: Record<string, number> = {};
    const lap = (name: string) => {
      const now = performance.now();
      steps[name] = Math.round(now - t);
      t = now;
    };
    const prev = this.latest;
    // Nothing written since the newest snapshot (a single node's log: what a seal would hold).
    if (prev && this.engine.dumpsState && prev.seq >= this.engine.lastSequence) return prev;
    await mkdir(this.dir, { recursive: true, mode: PRIVATE_DIR });
    const tmp = join(this.dir, `tmp-${crypto.randomUUID()}`);
    await mkdir(tmp, { mode: PRIVATE_DIR });
    // Awaited: other work may run meanwhile, so it is timed apart from the state (taken in one step).
    lap('directory');
    // An incremental snapshot's record files and graphs, placed by the worker while the dumps are written here.
    let placing: Promise<PartsResult> | undefined;
    let dumps: ReturnType<typeof writeDumps> | undefined;
    try {
      // The seal and the state in one synchronous step. A single node's log seals exactly the records
      // appended before the call (SegmentLog.roll), each applied as it was appended, so the state
      // taken here is the snapshot's, even while writes flow (before, a seal awaited first let writes
      // in between, and snapshots during a bulk load held no dumps). A cluster's log seals where the
      // stream is: its snapshots hold no dumps, and the graphs' documents are reconciled.
      const sealing = this.engine.sealLog();
      // Awaited below; a failure before then must not go unhandled.
      sealing.catch(() => {});
      const at = this.engine.lastSequence;
      const exact = this.engine.dumpsState;
      const mainGraphs = this.engine.saveGraphs((kbId) => join(tmp, `main-graph-${kbId}.usearch`), { viewsOnly: !reuseGraphs });
      // The indexes and items as they are (with the vector and text files): a restart replays no
      // record. Taken in this step, written while the engine goes on.
      if (withDumps && exact) {
        lap('graphs saved (request thread)');
        const indexes = this.engine.dumpIndexes();
        lap('index dumps taken (request thread)');
        const items = this.engine.dumpItems(itemMarks(prev, this.bases));
        lap('item dumps taken (request thread)');
        dumps = writeDumps(tmp, indexes, items, prev, this.bases);
        dumps.catch(() => {});
        lap('dumps prepared (request thread)');
      }
      // Continue the previous snapshot instead of rewriting it (build.ts): only when the state is
      // exactly the snapshot's (a cluster's log range may hold other shards' records; a graph saved
      // after more was applied could belong to a configuration activated since, or the counts
      // differ), so nothing is reconciled.
      const incremental = !compact && exact && this.continues(prev, at, reuseGraphs);
      const { knowledgeBases, contents, chunks } = this.engine.stats();
      const graphThreshold = this.engine.graphThreshold;
      const shards = this.engine.shards.toJSON();
      lap('state taken (request thread)');
      const seq = await sealing;
      lap('seal log');
      if (exact && seq !== at) throw new Error(`the log sealed through ${seq}, not ${at} where the state was taken`);
      if (prev && prev.seq >= seq) {
        await dumps?.catch(() => {});
        await rm(tmp, { recursive: true, force: true });
        return prev;
      }
      const range = this.engine.logRange(prev?.seq ?? 0, seq);
      const base: BuildRequest = {
        prevDir: prev?.dir,
        log: range,
        seq,
        outDir: tmp,
        graphThreshold,
        mainGraphs,
        shards,
        ...(incremental ? { incremental: { stats: { knowledgeBases, contents, chunks } } } : {}),
      };
      this.pool ??= new WorkerPool({ size: 1, workerUrl: workerUrl('snapshot'), retries: 0 });
      // The log's tail linked and checked, the graphs moved in (after a bulk load, most of a
      // second) while the dumps are written: neither waits for the other.
      placing = incremental ? this.pool.run<PartsResult>({ placeParts: base }) : undefined;
      placing?.catch(() => {});
      // Everything of the state is taken: the dumps are written while the engine goes on.
      const written: Awaited<ReturnType<typeof writeDumps>> = dumps ? await dumps : { indexes: [], bases: noBases() };
      lap('dumps written');
      const placed = await placing;
      lap('parts placed (worker)');
      const request: BuildRequest = {
        ...base,
        indexes: written.indexes,
        ...(written.items ? { items: written.items } : {}),
        ...(placed ? { parts: placed.parts } : {}),
      };
      const { manifest, phases: built } = await this.pool.run<BuildResult>(request);
      const phases = { ...placed?.phases, ...built };
      lap('build (worker)');
      const dir = join(this.dir, snapshotDirName(seq));
      await rename(tmp, dir);
      await fsyncPathAsync(this.dir);
      lap('rename');
      this.bases = written.bases;
      this.latest = { seq, dir, manifest, phases: { ...steps, ...Object.fromEntries(Object.entries(phases).map(([k, v]) => [`worker: ${k}`, v])) } };
      return this.latest;
    } catch (err) {
      // Nothing writes into it any more before it goes.
      await placing?.catch(() => {});
      await dumps?.catch(() => {});
      await rm(tmp, { recursive: true, force: true });
      throw err;
    }
  }

  /**
   * Whether a snapshot at `seq` may continue `prev`: one of format 2 on, not past MAX_TAILS in a
   * row. At shutdown (`atShutdown`: every graph saved, also those in memory) that is enough: the
   * stop must be quick. Otherwise there must also be an older snapshot sharing no records with
   * `prev` (kept with the log after it by SnapshotManager: damage to a shared file leaves it to
   * fall back to), every graph must be a file the builder wrote (linked, where a snapshot built
   * whole builds the others), and the records mostly live (DEAD_RECORDS_SHARE). A bulk load's
   * snapshots then link what the one before wrote instead of rewriting every record (at 454k
   * chunks a worker spent 59 s on it, on one of the two cores the load had).
   */
  private continues(prev: SnapshotInfo | undefined, seq: number, atShutdown: boolean): prev is SnapshotInfo {
    if (!prev || prev.manifest.format < 2 || tailSnapshots(prev.manifest) >= MAX_TAILS) return false;
    if (atShutdown) return true;
    if (this.engine.graphsOutsideFiles() > 0 || fallbackOf(this.dir, prev.dir) === undefined) return false;
    const records = prev.manifest.stats.records + Math.max(0, seq - prev.seq);
    return liveRecords(this.engine.stats()) >= (1 - DEAD_RECORDS_SHARE) * records;
  }

  /**
   * The bytes the next snapshot writes: the newest one's index and item dumps (a delta's base
   * counted) when it would continue that one, else every file it holds (records, graphs and dumps
   * written again). The snapshot policy waits for the log to grow by a share of this.
   */
  nextWriteBytes(): number {
    const prev = this.latest;
    if (!prev) return 0;
    const sizes = new Map(prev.manifest.files.map((f) => [f.name, f.bytes]));
    if (!this.engine.dumpsState || !this.continues(prev, this.engine.lastSequence, false)) {
      let all = 0;
      for (const bytes of sizes.values()) all += bytes;
      return all;
    }
    let dumps = 0;
    for (const d of prev.manifest.indexes ?? []) dumps += (sizes.get(d.file) ?? 0) + (d.base ? (sizes.get(d.base) ?? 0) : 0);
    for (const f of prev.manifest.items?.files ?? []) dumps += (sizes.get(f.file) ?? 0) + (f.base ? (sizes.get(f.base) ?? 0) : 0);
    return dumps;
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.cancelCheck();
    await this.pool?.close();
  }
}
