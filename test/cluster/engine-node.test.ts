// Cluster mode at the engine, no HTTP: two engines as two nodes of one JetStream stream (a real
// nats-server), two shards, node A holding shard 0 and node B shard 1. Shard ownership is the
// engine's guarantee (SHARD_NOT_HELD for content on the other node, whatever asks), and checked
// writes are exact across nodes: concurrent creates and adds through both nodes never pass a quota.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShardSet, type Engine, type EngineError, type KnowledgeBaseRecord } from '../../engine';
import { openEngine } from '../../snapshots';
import { eventually } from '../helpers/eventually';
import { NO_EMBEDDING, textKbConfig } from '../helpers/kb-config';
import { NATS_SERVER, NatsCluster } from '../helpers/nats';

let nats: NatsCluster;
const dirs: string[] = [];
let a: Engine;
let b: Engine;
const QUOTAS = { knowledgeBases: 4, contents: 3 };

async function node(name: string, shard: number): Promise<Engine> {
  const dataDir = mkdtempSync(join(tmpdir(), `kb-engine-node-${name}-`));
  dirs.push(dataDir);
  const { engine } = await openEngine({
    dataDir,
    compute: { documentWorkers: 1, settings: { allowRemoteModels: false, threads: 1 } },
    log: () => {},
    quotas: QUOTAS,
    cluster: {
      servers: nats.urls,
      stream: 'KB_ENGINE_NODE',
      replicas: 1,
      shards: new ShardSet(2, [shard]),
      nodeId: name,
      advertiseUrl: `http://${name}.invalid`,
      heartbeatMs: 200,
    },
  });
  engine.startIngestion();
  return engine;
}

const create = (engine: Engine, org: string) =>
  engine.createKnowledgeBase(org, { name: 'kb', description: '', type: 'TEXT_HIGH_QUALITY', config: textKbConfig(NO_EMBEDDING) });

/** Knowledge bases made through `engine` until one is on each shard: [shard 0, shard 1]. */
async function onEachShard(engine: Engine, org: string): Promise<KnowledgeBaseRecord[]> {
  const found: KnowledgeBaseRecord[] = [];
  while (!found[0] || !found[1]) {
    const kb = await create(engine, org);
    const shard = engine.shards.shardOf(kb.id);
    // Only two stay, within the knowledge-base quota.
    if (found[shard]) await engine.deleteKnowledgeBase(org, kb.id);
    else found[shard] = kb;
  }
  return found;
}

beforeAll(async () => {
  if (!existsSync(NATS_SERVER)) throw new Error(`${NATS_SERVER} is missing: run "bun scripts/test-deps.ts"`);
  nats = await NatsCluster.start(1);
  a = await node('a', 0);
  b = await node('b', 1);
}, 60_000);

afterAll(async () => {
  await a?.close();
  await b?.close();
  await nats?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('two engines as two nodes', () => {
  test('content is served only by the node holding its shard; knowledge bases everywhere', async () => {
    const [kb0, kb1] = await onEachShard(a, 'org_shards');
    await eventually(
      'B has applied both',
      async () => b.listKnowledgeBases('org_shards').length,
      (n) => n >= 2,
      10_000,
    );
    // A holds shard 0: its content calls work there and fail typed on B, and the other way round.
    const item = await a.addContent('org_shards', kb0!.id, { text: 'held by node A' });
    expect(a.getContent('org_shards', kb0!.id, item.id).current.text).toBe('held by node A');
    for (const [engine, kb, shard] of [
      [b, kb0!, 0],
      [a, kb1!, 1],
    ] as const) {
      for (const call of [
        () => engine.addContent('org_shards', kb.id, { text: 'not here' }),
        () => engine.listContents('org_shards', kb.id, 0, 10),
        () => engine.searchFullText('org_shards', kb.id, { query: 'held', limit: 5 }),
        () => engine.ingestionProgress('org_shards', kb.id),
        () => engine.getContent('org_shards', kb.id, item.id),
      ]) {
        let caught: unknown;
        try {
          await call();
        } catch (err) {
          caught = err;
        }
        expect(caught).toMatchObject({ code: 'SHARD_NOT_HELD', details: { kbId: kb.id, shard } });
      }
      // The knowledge base itself (its record) answers on every node.
      expect(engine.getKnowledgeBase('org_shards', kb.id).id).toBe(kb.id);
    }
    // The refusal names the live nodes that hold the shard (where the server sends the request).
    const holders = async () => {
      try {
        a.listContents('org_shards', kb1!.id, 0, 1);
        return [];
      } catch (err) {
        return (err as EngineError<'SHARD_NOT_HELD'>).details.nodes.map((n) => n.nodeId);
      }
    };
    await eventually('A names B as the holder of shard 1', holders, (ids) => ids.includes('b'), 10_000);
    expect(b.listContents('org_shards', kb1!.id, 0, 10).total).toBe(0);
  }, 60_000);

  test('a quota holds exactly when both nodes write at once', async () => {
    const org = 'org_race';
    const made = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => create(i % 2 ? a : b, org)));
    const fulfilled = made.filter((r) => r.status === 'fulfilled');
    expect(fulfilled).toHaveLength(QUOTAS.knowledgeBases);
    for (const r of made) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'knowledgeBases' } });
    for (const engine of [a, b])
      await eventually(
        'both nodes see the same knowledge bases',
        async () => engine.listKnowledgeBases(org).length,
        (n) => n === QUOTAS.knowledgeBases,
        10_000,
      );
  }, 60_000);

  test('the item quota counts every shard and holds exactly across nodes', async () => {
    const org = 'org_items';
    const [kb0, kb1] = await onEachShard(a, org);
    await eventually(
      'B has applied both',
      async () => b.listKnowledgeBases(org).length,
      (n) => n >= 2,
      10_000,
    );
    // Each node adds to the knowledge base it holds, all at once.
    const added = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? a.addContent(org, kb0!.id, { text: `a ${i}` }) : b.addContent(org, kb1!.id, { text: `b ${i}` }))),
    );
    expect(added.filter((r) => r.status === 'fulfilled')).toHaveLength(QUOTAS.contents);
    for (const r of added) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'contents' } });
    await eventually(
      'both nodes count the same items',
      async () => a.listContents(org, kb0!.id, 0, 10).total + b.listContents(org, kb1!.id, 0, 10).total,
      (n) => n === QUOTAS.contents,
      10_000,
    );
  }, 60_000);
});
