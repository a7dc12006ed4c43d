// JSONL import in a sharded cluster: two server processes on one JetStream server, node A holding
// shard 0 and node B shard 1. An import sent to the node that does not hold the knowledge base's
// shard is forwarded with its body unread and answers as the holder does: 201 with the ids (the
// items then searchable through either node), or 400 naming the bad line with nothing written.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { shardOf } from '../../engine';
import { eventually } from '../helpers/eventually';
import { NATS_SERVER, NatsCluster } from '../helpers/nats';
import { KEY, ORG, TestServer } from '../helpers/server';

let nats: NatsCluster;
const nodes: TestServer[] = [];
const SHARDS = 2;
const kbOnShard: string[] = [];

beforeAll(async () => {
  if (!existsSync(NATS_SERVER)) throw new Error(`${NATS_SERVER} is missing: run "bun scripts/test-deps.ts"`);
  nats = await NatsCluster.start(1);
  await Promise.all(
    [0, 1].map(async (i) => {
      nodes[i] = await TestServer.start({
        env: {
          CLUSTER_NATS_URLS: nats.urls.join(','),
          CLUSTER_STREAM: 'KB_IMPORT',
          CLUSTER_REPLICAS: '1',
          CLUSTER_SHARDS: String(SHARDS),
          NODE_SHARDS: String(i),
          NODE_ID: `node-${'ab'[i]}`,
          SNAPSHOT_ON_SHUTDOWN: 'false',
          RATE_LIMIT_RPS: '0',
        },
      });
    }),
  );
  for (const node of nodes) {
    await eventually(
      'both nodes live',
      () => node.api('GET', '/ready'),
      (r) => r.status === 200 && r.body.cluster?.liveNodeCount === 2,
    );
  }
  for (let n = 0; kbOnShard.filter(Boolean).length < SHARDS && n < 64; n++) {
    const res = await nodes[0]!.api('POST', '/api/v1/knowledge-bases', { name: `kb ${n}`, type: 'TEXT_COST_EFFECTIVE' });
    expect(res.status).toBe(201);
    kbOnShard[shardOf(res.body.data.id, SHARDS)] ??= res.body.data.id;
  }
  for (const kb of kbOnShard)
    for (const node of nodes)
      await eventually(
        `${kb} on ${node.url}`,
        () => node.api('GET', `/api/v1/knowledge-bases/${kb}`),
        (r) => r.status === 200,
        10_000,
      );
}, 120_000);

afterAll(async () => {
  for (const n of nodes) await n?.kill9();
  for (const n of nodes) n?.cleanup();
  await nats?.stop();
});

const importTo = (node: TestServer, kb: string, body: string, query = '') =>
  fetch(`${node.url}/api/v1/knowledge-bases/${kb}/contents/import${query}`, {
    method: 'POST',
    headers: { 'x-service-organization-id': ORG, 'x-service-api-key': KEY, 'content-type': 'application/x-ndjson' },
    body,
  });

test('an import through the node that does not hold the shard is forwarded and indexed by the holder', async () => {
  for (const [shard, kb] of kbOnShard.entries()) {
    const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ text: `Shard ${shard} note ${i}: narwhals surface near the ice.`, metadata: { i } }));
    // Always through node A: shard 1 is forwarded to B, shard 0 is A's own.
    const res = await importTo(nodes[0]!, kb!, `${lines.join('\n')}\n`, '?wait=true');
    expect(res.status).toBe(201);
    const body = (await res.json()) as { data: { ids: string[]; count: number; ready: number } };
    expect(body.data).toMatchObject({ count: 40, ready: 40 });
    for (const node of nodes) {
      const hits = await node.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query: 'narwhals', limit: 100 });
      expect(hits.status).toBe(200);
      expect(new Set(hits.body.data.map((h: { contentId: string }) => h.contentId))).toEqual(new Set(body.data.ids));
    }
  }
}, 120_000);

test('a bad line forwarded to the holder answers 400 naming it; nothing is written', async () => {
  const kb = kbOnShard[1]!;
  const before = (await nodes[1]!.api('GET', `/api/v1/knowledge-bases/${kb}/contents`)).body.total;
  const res = await importTo(nodes[0]!, kb, '{"text":"fine"}\n{"text":"also fine"}\n{"text":7}\n');
  expect(res.status).toBe(400);
  const body = (await res.json()) as { error: { message: string; details: { path: string }[] } };
  expect(body.error.message).toStartWith('line 3');
  expect(body.error.details[0]!.path).toBe('/lines/3/text');
  expect((await nodes[1]!.api('GET', `/api/v1/knowledge-bases/${kb}/contents`)).body.total).toBe(before);
}, 60_000);
