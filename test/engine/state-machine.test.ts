// The state machine (engine/state/machine.ts) is the one interpretation of log records. Property:
// for random record sequences (stale versions, outdated analyzers, records for deleted knowledge
// bases, failures, retries of items that did not fail, re-embedding: builds of other
// configurations started, restarted, cancelled and activated, results for them and for
// configurations no longer built), the live state built from the whole log
// equals the live state built from the compactor's kept records (snapshots/compactor.ts), item
// for item: version, status, error, searchable chunks. And a record that does not apply changes
// nothing.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ANALYZER_VERSION } from '../../engine/analysis/analyzer';
import type { LogRecord } from '../../engine/records';
import type { LiveState } from '../../engine/state/live-state';
import { Compactor } from '../../snapshots/compactor';
import { NO_EMBEDDING, textKbConfig } from '../helpers/kb-config';
import { AT, ITEMS, KBS, liveState, type Op, observe, opArb, toRecords } from '../helpers/random-log';

describe('the state machine', () => {
  test('replaying the compacted log builds the state the whole log builds (2,000 random logs)', () => {
    const root = mkdtempSync(join(tmpdir(), 'kb-machine-'));
    // How often the logs exercise re-embedding, so the property is known to cover it.
    const applied = { reconfigure: 0, activate: 0, builtResults: 0 };
    // Half the logs start a build at once, with items to build, and run long enough to see it through.
    const reembedding: Op[] = [...[0, 1, 2].map((item): Op => ({ op: 'put', kb: 0, item })), { op: 'reconfigure', kb: 0, shape: 1 }];
    try {
      fc.assert(
        fc.property(fc.boolean(), fc.array(opArb, { minLength: 1, maxLength: 80, size: 'max' }), (build, ops) => {
          const records = toRecords([{ op: 'create', kb: 0 }, { op: 'create', kb: 1 }, ...(build ? reembedding : []), ...ops]);
          const whole = liveState(root);
          const compactor = new Compactor();
          records.forEach((record, i) => {
            // Records the engine would reject up front (a document number already taken) never reach a log.
            try {
              const building = record.t === 'content.indexed' && record.configId !== undefined && whole.kbs.get(record.kbId)?.building?.id === record.configId;
              if (whole.apply(record)) {
                if (record.t === 'kb.reconfigure') applied.reconfigure++;
                if (record.t === 'kb.activate') applied.activate++;
                if (building) applied.builtResults++;
              }
            } catch {
              return;
            }
            compactor.add({ seq: i + 1, record, attachmentBytes: 0 });
          });
          const compacted = liveState(root);
          for (const kept of compactor.kept()) compacted.apply(kept.record);
          expect(observe(compacted)).toEqual(observe(whole));
          expect(compactor.kept().length).toBeLessThanOrEqual(records.length);
        }),
        { numRuns: 2000, seed: 20261123 },
      );
      console.log(`[machine] applied over the random logs: ${JSON.stringify(applied)}`);
      expect(applied.reconfigure).toBeGreaterThan(500);
      expect(applied.activate).toBeGreaterThan(100);
      expect(applied.builtResults).toBeGreaterThan(500);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test('a node holding some shards keeps exactly their content, live and compacted, every knowledge base, and the ids of the items kept elsewhere (500 random logs)', () => {
    const root = mkdtempSync(join(tmpdir(), 'kb-machine-'));
    const holds = (kbId: string) => kbId === KBS[0];
    try {
      fc.assert(
        fc.property(fc.array(opArb, { minLength: 1, maxLength: 60 }), (ops) => {
          const records = toRecords([{ op: 'create', kb: 0 }, { op: 'create', kb: 1 }, ...ops]);
          const whole = liveState(root);
          const sharded = liveState(root, holds);
          const compactor = new Compactor(holds);
          records.forEach((record, i) => {
            try {
              whole.apply(record);
            } catch {
              return;
            }
            sharded.apply(record);
            compactor.add({ seq: i + 1, record, attachmentBytes: 0 });
          });
          // What the whole log builds, less the content of the knowledge base not held.
          const expected = observe(whole).map((k) =>
            holds(k.kb.id)
              ? k
              : {
                  ...k,
                  kb: { ...k.kb, progress: k.kb.progress && { done: 0, total: 0, chunksLeft: 0 } },
                  items: [],
                  walrus: [],
                  built: k.built && [],
                  builtWalrus: k.builtWalrus && [],
                },
          );
          expect(observe(sharded)).toEqual(expected);
          const compacted = liveState(root, holds);
          for (const kept of compactor.kept()) compacted.apply(kept.record);
          expect(observe(compacted)).toEqual(expected);
          expect(compactor.kept().every((k) => !k.record.t.startsWith('content.') || holds((k.record as { kbId: string }).kbId))).toBe(true);
          // The items kept elsewhere are still known by id (the content quota counts them), live and
          // through the snapshot's census.
          const census = (state: LiveState) => [...state.kbs.values()].map((k) => [k.id, [...k.itemsElsewhere].sort()]).sort();
          const expectedCensus = [...whole.kbs.values()].map((k) => [k.id, holds(k.id) ? [] : [...k.contents.keys()].sort()]).sort();
          expect(census(sharded)).toEqual(expectedCensus);
          expect(census(compacted)).toEqual(expectedCensus);
        }),
        { numRuns: 500, seed: 20261125 },
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test('a record that does not apply returns false and changes nothing', () => {
    const root = mkdtempSync(join(tmpdir(), 'kb-machine-'));
    try {
      const state = liveState(root);
      const [create, put] = toRecords([
        { op: 'create', kb: 0 },
        { op: 'put', kb: 0, item: 0 },
      ]);
      expect(state.apply(create!)).toBe(true);
      expect(state.apply(put!)).toBe(true);
      const before = JSON.stringify(observe(state));
      const noOps: LogRecord[] = [
        { t: 'kb.update', id: KBS[1]!, name: 'x', description: '', at: AT },
        { t: 'content.put', kbId: KBS[1]!, id: ITEMS[0]!, version: 1, text: 't', metadata: {}, source: { kind: 'text' }, at: AT },
        { t: 'content.delete', kbId: KBS[0]!, id: ITEMS[2]! },
        { t: 'content.indexed', kbId: KBS[0]!, id: ITEMS[0]!, version: 2, analyzer: ANALYZER_VERSION, chunks: [], firstDoc: 0, at: AT },
        { t: 'content.indexed', kbId: KBS[0]!, id: ITEMS[0]!, version: 1, analyzer: ANALYZER_VERSION - 1, chunks: [], firstDoc: 0, at: AT },
        { t: 'content.failed', kbId: KBS[0]!, id: ITEMS[0]!, version: 0, error: 'e', at: AT },
        // Not failed: nothing to retry.
        { t: 'content.retry', kbId: KBS[0]!, id: ITEMS[0]!, version: 1, at: AT },
        // Indexes as the active configuration does, with nothing being built: nothing to cancel.
        { t: 'kb.reconfigure', kbId: KBS[0]!, config: { ...textKbConfig(NO_EMBEDDING), id: 'cfg_same', createdAt: AT }, at: AT },
        // No such build; results for a configuration the knowledge base does not have.
        { t: 'kb.activate', kbId: KBS[0]!, configId: 'cfg_other', at: AT },
        { t: 'content.indexed', kbId: KBS[0]!, id: ITEMS[0]!, version: 1, analyzer: ANALYZER_VERSION, chunks: [], firstDoc: 0, configId: 'cfg_other', at: AT },
        { t: 'content.failed', kbId: KBS[0]!, id: ITEMS[0]!, version: 1, error: 'e', configId: 'cfg_other', at: AT },
      ];
      for (const record of noOps) expect({ t: record.t, applied: state.apply(record) }).toEqual({ t: record.t, applied: false });
      expect(JSON.stringify(observe(state))).toBe(before);
      // A configuration recorded before analyzers were versioned in it (analyzer 1) takes results of
      // that analyzer and of newer ones; a build with a newer analyzer refuses older results.
      const old = { ...textKbConfig(NO_EMBEDDING), id: 'cfg_old', createdAt: AT } as ReturnType<typeof textKbConfig> & { id: string; createdAt: string };
      delete old.analyzer;
      const kbOld = KBS[1]!;
      expect(
        state.apply({
          t: 'kb.create',
          kb: { id: kbOld, orgId: 'org', name: 'old', description: '', type: 'TEXT_HIGH_QUALITY', config: old, createdAt: AT, updatedAt: AT },
        }),
      ).toBe(true);
      expect(state.apply({ t: 'content.put', kbId: kbOld, id: ITEMS[0]!, version: 1, text: 'walrus', metadata: {}, source: { kind: 'text' }, at: AT })).toBe(
        true,
      );
      expect(state.apply({ t: 'content.indexed', kbId: kbOld, id: ITEMS[0]!, version: 1, analyzer: 1, chunks: [], firstDoc: 0, at: AT })).toBe(true);
      expect(state.apply({ t: 'kb.reconfigure', kbId: kbOld, config: { ...textKbConfig(NO_EMBEDDING), id: 'cfg_new', createdAt: AT }, at: AT })).toBe(true);
      expect(
        state.apply({ t: 'content.indexed', kbId: kbOld, id: ITEMS[0]!, version: 1, analyzer: 1, chunks: [], firstDoc: 0, configId: 'cfg_new', at: AT }),
      ).toBe(false);
      expect(
        state.apply({
          t: 'content.indexed',
          kbId: kbOld,
          id: ITEMS[0]!,
          version: 1,
          analyzer: ANALYZER_VERSION,
          chunks: [],
          firstDoc: 0,
          configId: 'cfg_new',
          at: AT,
        }),
      ).toBe(true);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
