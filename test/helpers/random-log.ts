// Random logs for properties of the state machine and of snapshots: operations on two knowledge
// bases and three items, turned into records the way the engine writes them (test/engine/
// state-machine.test.ts, test/engine/snapshot-build.test.ts), and what a reader can observe of a state.
import fc from 'fast-check';
import { join } from 'node:path';
import { ANALYZER_VERSION } from '../../engine/analysis/analyzer';
import { OriginalsStore } from '../../engine/files/originals';
import type { LogRecord } from '../../engine/records';
import { LiveState } from '../../engine/state/live-state';
import { NO_EMBEDDING, textKbConfig } from './kb-config';

export const KBS = ['kb_000000000000000000000000000a', 'kb_000000000000000000000000000b'];
export const ITEMS = ['ct_0000000000000000000000000001', 'ct_0000000000000000000000000002', 'ct_0000000000000000000000000003'];
export const AT = '2026-01-01T00:00:00.000Z';

export type Op =
  | { op: 'create'; kb: number }
  | { op: 'update'; kb: number }
  | { op: 'deleteKb'; kb: number }
  | { op: 'put'; kb: number; item: number }
  | { op: 'delete'; kb: number; item: number }
  | { op: 'indexed'; kb: number; item: number; stale: boolean; oldAnalyzer: boolean; embeddingError: boolean; next: boolean }
  | { op: 'failed'; kb: number; item: number; stale: boolean; next: boolean }
  | { op: 'retry'; kb: number; item: number; stale: boolean }
  | { op: 'reconfigure'; kb: number; shape: number }
  | { op: 'activate'; kb: number }
  | { op: 'mark'; kb: number };

const kb = fc.integer({ min: 0, max: KBS.length - 1 });
const item = fc.integer({ min: 0, max: ITEMS.length - 1 });
/** Mostly records that apply: a stale version or an outdated analyzer one time in five. */
const rarely = fc.integer({ min: 0, max: 4 }).map((n) => n === 0);
export const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('create' as const), kb }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('update' as const), kb }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('deleteKb' as const), kb }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('put' as const), kb, item }), weight: 8 },
  { arbitrary: fc.record({ op: fc.constant('delete' as const), kb, item }), weight: 1 },
  {
    arbitrary: fc.record({
      op: fc.constant('indexed' as const),
      kb,
      item,
      stale: rarely,
      oldAnalyzer: rarely,
      embeddingError: fc.boolean(),
      next: fc.boolean(),
    }),
    weight: 5,
  },
  { arbitrary: fc.record({ op: fc.constant('failed' as const), kb, item, stale: rarely, next: fc.boolean() }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('retry' as const), kb, item, stale: rarely }), weight: 3 },
  // Shape 0 indexes as the configuration knowledge bases are created with (a cancel while it is active).
  { arbitrary: fc.record({ op: fc.constant('reconfigure' as const), kb, shape: fc.integer({ min: 0, max: 2 }) }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('activate' as const), kb }), weight: 2 },
  // Changes nothing (logged at shutdown so that a snapshot with dumps can follow one without).
  { arbitrary: fc.record({ op: fc.constant('mark' as const), kb }), weight: 1 },
);

/** Chunk sizes of the configuration shapes a build may ask for (shape 0: as knowledge bases are created). */
const SHAPES = [2000, 1000, 500];

/** Turn operations into records, the way the engine writes them (versions count up per item). */
export function toRecords(ops: Op[]): LogRecord[] {
  const versions = new Map<string, number>();
  const nextDoc = new Map<string, number>();
  /** The configuration of each knowledge base's last build asked for (results for it, its activation). */
  const lastBuild = new Map<string, string>();
  let configs = 0;
  let chunkIds = 0;
  const out: LogRecord[] = [];
  for (const o of ops) {
    const kbId = KBS[o.kb]!;
    if (o.op === 'create') {
      out.push({
        t: 'kb.create',
        kb: {
          id: kbId,
          orgId: 'org',
          name: 'n',
          description: '',
          type: 'TEXT_HIGH_QUALITY',
          config: { ...textKbConfig(NO_EMBEDDING), id: 'cfg', createdAt: AT },
          createdAt: AT,
          updatedAt: AT,
        },
      });
      nextDoc.set(kbId, 0);
      continue;
    }
    if (o.op === 'update') {
      out.push({ t: 'kb.update', id: kbId, name: `renamed ${out.length}`, description: 'd', at: AT });
      continue;
    }
    if (o.op === 'mark') {
      out.push({ t: 'log.mark', at: AT });
      continue;
    }
    if (o.op === 'deleteKb') {
      out.push({ t: 'kb.delete', id: kbId });
      continue;
    }
    if (o.op === 'reconfigure') {
      const config = { ...textKbConfig(NO_EMBEDDING, { chunking: { size: SHAPES[o.shape]!, overlap: 10 } }), id: `cfg_${++configs}`, createdAt: AT };
      if (o.shape === 0) config.chunking = textKbConfig(NO_EMBEDDING).chunking;
      lastBuild.set(kbId, config.id);
      out.push({ t: 'kb.reconfigure', kbId, config, at: AT });
      continue;
    }
    if (o.op === 'activate') {
      out.push({
        t: 'kb.activate',
        kbId,
        configId: lastBuild.get(kbId) ?? 'cfg_none',
        at: `2026-01-02T00:00:${String(out.length % 60).padStart(2, '0')}.000Z`,
      });
      continue;
    }
    const id = ITEMS[o.item]!;
    const key = `${kbId}/${id}`;
    const current = versions.get(key) ?? 0;
    if (o.op === 'put') {
      versions.set(key, current + 1);
      out.push({
        t: 'content.put',
        kbId,
        id,
        version: current + 1,
        text: `text of ${id} v${current + 1} walrus falcon`,
        metadata: { v: current + 1 },
        source: { kind: 'text' },
        at: AT,
      });
    } else if (o.op === 'delete') {
      out.push({ t: 'content.delete', kbId, id });
    } else if (o.op === 'indexed') {
      // For the last build asked for (it may be over), or for the active configuration.
      const configId = o.next ? lastBuild.get(kbId) : undefined;
      const space = `${kbId}/${configId}`;
      const firstDoc = nextDoc.get(space) ?? 0;
      nextDoc.set(space, firstDoc + 2);
      const chunk = (n: number) => ({ id: `ch_${String(++chunkIds).padStart(28, '0')}`, start: 0, end: 4, terms: ['walrus', `t${n}`], tfs: [1, 1], length: 2 });
      out.push({
        t: 'content.indexed',
        kbId,
        id,
        version: o.stale ? current - 1 : current,
        analyzer: o.oldAnalyzer ? ANALYZER_VERSION - 1 : ANALYZER_VERSION,
        chunks: [chunk(1), chunk(2)],
        firstDoc,
        ...(configId ? { configId } : {}),
        ...(o.embeddingError ? { embeddingError: 'model down' } : {}),
        at: AT,
      });
    } else if (o.op === 'failed') {
      const configId = o.next ? lastBuild.get(kbId) : undefined;
      out.push({ t: 'content.failed', kbId, id, version: o.stale ? current - 1 : current, error: 'unreadable', ...(configId ? { configId } : {}), at: AT });
    } else {
      out.push({ t: 'content.retry', kbId, id, version: o.stale ? current - 1 : current, at: AT });
    }
  }
  return out;
}

export function liveState(root: string, holds?: (kbId: string) => boolean): LiveState {
  return new LiveState({ originals: new OriginalsStore(join(root, 'files')), discard: () => {}, onVectorsAdded: () => {}, holds });
}

/** What a reader can observe of the state. */
export function observe(state: LiveState) {
  return [...state.kbs.values()]
    .sort((a, b) => (a.id < b.id ? -1 : 1))
    .map((k) => ({
      kb: {
        id: k.id,
        name: k.record.name,
        description: k.record.description,
        updatedAt: k.record.updatedAt,
        config: k.record.config.id,
        building: k.building?.id,
        progress: k.buildProgress(),
      },
      built: k.building
        ? [...k.contents.values()]
            .sort((a, b) => (a.id < b.id ? -1 : 1))
            .map((i) => ({ id: i.id, status: k.statusIn(k.indexSet(k.building!.id)!, i), live: k.indexSet(k.building!.id)!.live.get(i.id)?.version.version }))
        : undefined,
      builtWalrus: k.building
        ? k
            .indexSet(k.building.id)!
            .fullTextTop(['walrus'], 100)
            .map((h) => ({ chunk: k.indexSet(k.building!.id)!.chunkIdOf(h.doc), score: h.score }))
        : undefined,
      items: [...k.contents.values()]
        .sort((a, b) => (a.id < b.id ? -1 : 1))
        .map((i) => ({ id: i.id, version: i.current.version, status: i.status, error: i.error, live: i.live?.version.version, docs: i.live?.docs })),
      walrus: k.fullTextTop(['walrus'], 100).map((h) => ({ chunk: k.chunkIdOf(h.doc), score: h.score })),
    }));
}
