// Item deltas (engine/kb/item-dump.ts): a knowledge base dumped as a delta of its last full dump,
// applied to that dump, gives back exactly its items (in list order, with their versions, statuses
// and errors), whatever happened in between: items added (also with creation times before others,
// and equal ones), updated, deleted (also items the base never held), their status changed.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { applyItemDelta, loadItems, type ItemDump, type ItemMark } from '../../engine/kb/item-dump';
import { KnowledgeBase } from '../../engine/kb/knowledge-base';
import type { KnowledgeBaseRecord } from '../../engine/records';
import { NO_EMBEDDING, textKbConfig } from '../helpers/kb-config';

const RECORD: KnowledgeBaseRecord = {
  id: 'kb_delta',
  orgId: 'org',
  name: 'delta',
  description: '',
  type: 'TEXT_HIGH_QUALITY',
  config: { ...textKbConfig(NO_EMBEDDING), id: 'cfg_delta', createdAt: '2026-01-01T00:00:00.000Z' },
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
};
const CLOCK = { ms: 0, counter: 0 };
const at = (t: number) => new Date(Date.UTC(2026, 0, 1) + t * 1000).toISOString();

/** The items a dump gives back, as loading it makes them (texts held: no text store). */
function itemsOf(dump: ItemDump) {
  return loadItems(dump, RECORD.id, undefined, 0, () => {
    throw new Error('no item here has live chunks');
  }).items.map((i) => [i.id, i.createdAt, i.updatedAt, i.status, i.error, i.current.version, i.current.text, i.current.metadata]);
}

type Op =
  | { put: number; t: number; text: number }
  | { update: number; text: number }
  | { remove: number }
  | { status: number; to: 'ready' | 'failed' | 'pending' }
  | { snapshot: true };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ put: fc.integer({ min: 0, max: 60 }), t: fc.integer({ min: 0, max: 40 }), text: fc.nat(9) }) },
  { weight: 2, arbitrary: fc.record({ update: fc.nat(60), text: fc.nat(9) }) },
  { weight: 2, arbitrary: fc.record({ remove: fc.nat(60) }) },
  { weight: 2, arbitrary: fc.record({ status: fc.nat(60), to: fc.constantFrom('ready' as const, 'failed' as const, 'pending' as const) }) },
  { weight: 1, arbitrary: fc.constant({ snapshot: true as const }) },
);

describe('item deltas', () => {
  test('a delta applied to its base is the knowledge base as it is now, after any changes', () => {
    let deltas = 0;
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 120 }), (ops) => {
        const kb = new KnowledgeBase(RECORD);
        // What the previous snapshot holds: the last full dump and its mark.
        let base: { dump: ItemDump; mark: ItemMark } | undefined;
        const check = () => {
          const taken = kb.dumpItems(CLOCK, base?.mark)!;
          const now = itemsOf(taken.delta ? applyItemDelta(base!.dump, taken) : taken);
          expect(now).toEqual(
            kb.listContents(0, 1e9).map((i) => [i.id, i.createdAt, i.updatedAt, i.status, i.error, i.current.version, i.current.text, i.current.metadata]),
          );
          if (taken.delta) {
            deltas++;
            expect(taken.mark).toBe(base!.mark);
            expect(taken.items.ids.length + taken.delta.removed.length).toBeLessThanOrEqual(kb.contentCount / 2);
          } else base = { dump: taken, mark: taken.mark! };
        };
        const id = (n: number) => `ct_${String(n).padStart(3, '0')}`;
        // Most of the ids held, then a full dump: the changes after it are deltas until they are half of the items.
        for (let n = 0; n < 60; n += 2) kb.putContent(id(n), { version: 1, text: `first ${n}`, metadata: {}, source: { kind: 'text' } }, at(n % 7));
        check();
        for (const o of ops) {
          if ('put' in o) {
            if (kb.contents.has(id(o.put))) continue;
            kb.putContent(id(o.put), { version: 1, text: `text ${o.text}`, metadata: { n: o.text }, source: { kind: 'text' } }, at(o.t));
          } else if ('update' in o) {
            const item = kb.contents.get(id(o.update));
            if (item)
              kb.putContent(
                item.id,
                { version: item.current.version + 1, text: `new ${o.text}`, metadata: {}, source: { kind: 'text' } },
                at(99),
                item.createdAt,
              );
          } else if ('remove' in o) kb.deleteContent(id(o.remove));
          else if ('status' in o) {
            const item = kb.contents.get(id(o.status));
            if (item) kb.setStatus(item, o.to, o.to === 'failed' ? `failed ${o.status}` : undefined);
          } else check();
        }
        check();
      }),
      { numRuns: 300 },
    );
    // Most checks were deltas (a full dump comes first, and once half the items changed).
    expect(deltas).toBeGreaterThan(300);
  });

  test('deltas are taken of the full dump the caller holds only: another mark, or one before a full dump since, gives a full dump', () => {
    const kb = new KnowledgeBase(RECORD);
    for (let i = 0; i < 10; i++) kb.putContent(`ct_${i}`, { version: 1, text: `t${i}`, metadata: {}, source: { kind: 'text' } }, at(i));
    const first = kb.dumpItems(CLOCK)!;
    expect(first.delta).toBeUndefined();
    kb.putContent('ct_10', { version: 1, text: 't10', metadata: {}, source: { kind: 'text' } }, at(10));
    kb.deleteContent('ct_0');
    const delta = kb.dumpItems(CLOCK, first.mark)!;
    expect(delta.items.ids).toEqual(['ct_10']);
    expect(delta.delta).toEqual({ removed: ['ct_0'] });
    // A mark of another knowledge base, or of an epoch the base is not: a full dump.
    expect(kb.dumpItems(CLOCK, { of: {}, epoch: first.mark!.epoch })!.delta).toBeUndefined();
    // That full dump is the base now: a delta of the first is refused.
    expect(kb.dumpItems(CLOCK, first.mark)!.delta).toBeUndefined();
    // Texts rewritten, a configuration activated: every item counts as changed.
    const second = kb.dumpItems(CLOCK)!;
    kb.breakLineage();
    expect(kb.dumpItems(CLOCK, second.mark)!.delta).toBeUndefined();
    // Past half of the items changed, a full dump.
    const third = kb.dumpItems(CLOCK)!;
    for (let i = 1; i < 7; i++) kb.setStatus(kb.contents.get(`ct_${i}`)!, 'ready');
    expect(kb.dumpItems(CLOCK, third.mark)!.delta).toBeUndefined();
  });
});
