// The documents a filter allows in an index set (IndexSet.allowedSet): exactly the live chunks of
// the items whose live version matches (filter/metadata.ts matchesFilter), whatever form the
// evaluation picks: a chunk of a replaced version or of a deleted item is never allowed, a
// negation included, and a set restored from a dump allows the same.
import { expect, test } from 'bun:test';
import fc from 'fast-check';
import type { EvaluateOptions } from '../../engine/filter/expression';
import { matchesFilter, type Metadata, type MetadataFilter } from '../../engine/filter/metadata';
import { IndexSet } from '../../engine/kb/index-set';
import type { ContentItem } from '../../engine/kb/knowledge-base';
import type { IndexedChunk, KnowledgeBaseConfig } from '../../engine/records';
import { NO_EMBEDDING, textKbConfig } from '../helpers/kb-config';

const AT = '2026-01-01T00:00:00.000Z';
const CONFIG = { ...textKbConfig(NO_EMBEDDING), id: 'cfg_allowed', createdAt: AT } as KnowledgeBaseConfig;
const ITEMS = 6;

type Op = { op: 'index'; item: number; chunks: number; metadata: Metadata } | { op: 'delete'; item: number };

const metadata = fc.record(
  { team: fc.constantFrom('t0', 't1', 't2'), n: fc.integer({ min: 0, max: 5 }), tags: fc.array(fc.constantFrom('g0', 'g1'), { maxLength: 2 }) },
  { requiredKeys: [] },
) as fc.Arbitrary<Metadata>;
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('index' as const), item: fc.nat(ITEMS - 1), chunks: fc.integer({ min: 0, max: 3 }), metadata }), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant('delete' as const), item: fc.nat(ITEMS - 1) }), weight: 1 },
);
const FILTERS: MetadataFilter[] = [
  { team: 't1' },
  { team: { $ne: 't1' } },
  { tags: { $exists: false } },
  { n: { $gte: 2, $lt: 4 } },
  { $or: [{ team: 't0' }, { tags: 'g1' }] },
  { $and: [{ n: { $nin: [0, 1] } }, { tags: { $ne: 'g0' } }] },
  { team: ['t0', 't2'], n: { $lte: 3 } },
];
const MODES: EvaluateOptions[] = [{}, { listMax: Infinity }, { listMax: -1 }, { listMax: Infinity, checkFactor: 0 }];

function chunksOf(item: string, version: number, count: number): IndexedChunk[] {
  return Array.from({ length: count }, (_, i) => ({ id: `${item}_${version}_${i}`, start: 0, end: 1, terms: ['word'], tfs: [1], length: 1 }));
}

/** What each filter must allow: the chunks of every item's live version that matches. */
function expected(set: IndexSet, filter: MetadataFilter): number[] {
  const docs: number[] = [];
  for (const live of set.live.values()) if (matchesFilter(live.version.metadata, filter)) docs.push(...live.docs);
  return docs.sort((a, b) => a - b);
}

function allowedDocs(set: IndexSet, filter: MetadataFilter, options: EvaluateOptions): number[] {
  return [...set.allowedSet(filter, options)!.list()];
}

test('a filter allows exactly the live chunks whose version matches, through updates, deletes and a restore', () => {
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 40 }), (ops) => {
      const set = new IndexSet(CONFIG);
      const items = new Map<string, ContentItem>();
      const versions = new Map<string, number>();
      for (const op of ops) {
        const id = `ct_${op.item}`;
        if (op.op === 'delete') {
          set.drop(id);
          items.delete(id);
          continue;
        }
        const version = (versions.get(id) ?? 0) + 1;
        versions.set(id, version);
        const item: ContentItem = {
          id,
          kbId: 'kb',
          createdAt: AT,
          updatedAt: AT,
          status: 'ready',
          touched: 0,
          current: { version, text: 'word', metadata: op.metadata, source: { kind: 'text' } },
        };
        items.set(id, item);
        set.applyIndexed(item, chunksOf(id, version, op.chunks), undefined, set.docSpace);
        for (const filter of FILTERS) for (const mode of MODES) expect(allowedDocs(set, filter, mode)).toEqual(expected(set, filter));
      }
      // Restored: the records of the live versions replayed, then the dump loaded.
      const restored = new IndexSet(CONFIG);
      restored.beginRestore();
      const lives = [...set.live.entries()].sort((a, b) => a[1].docs[0]! - b[1].docs[0]! || 0);
      for (const [id, live] of lives) {
        if (live.docs.length === 0) continue;
        const item = { ...items.get(id)!, current: live.version };
        restored.applyIndexed(item, chunksOf(id, live.version.version, live.docs.length), undefined, live.docs[0]!);
      }
      restored.loadDump(set.dump());
      for (const filter of FILTERS)
        for (const mode of MODES) expect({ filter, docs: allowedDocs(restored, filter, mode) }).toEqual({ filter, docs: expected(set, filter) });
    }),
    { numRuns: 200 },
  );
});
