// Shards end to end: two real server processes on one JetStream server, with two shards, node A
// holding shard 0 and node B shard 1. A request about a knowledge base of the shard a node does not
// hold is forwarded (text, uploads, searches, reads) and answers as the holder does; content of a
// shard is kept and indexed only by its holders; authentication happens before forwarding; a
// forwarded request is never forwarded again; the content quota counts the items of every shard
// (also through a snapshot); with the holder gone the answer is a clear 503, and
// after its restart (from the stream alone) the same answers come back; snapshots hold only their
// node's shards, and a new node starts only from a snapshot holding its shards; a node configured
// with another shard count refuses the cluster's stream.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { shardOf } from '../../engine';
import { eventually } from '../helpers/eventually';
import { NATS_SERVER, NatsCluster } from '../helpers/nats';
import { startS3 } from '../helpers/s3';
import { KEY, ORG, TestServer } from '../helpers/server';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { S3ClusterSnapshots } from '../../snapshots';

let nats: NatsCluster;
const nodes: TestServer[] = [];
const dataDirs: string[] = [];
const SHARDS = 2;

const env = (i: number, extra: Record<string, string> = {}): Record<string, string> => ({
  CLUSTER_NATS_URLS: nats.urls.join(','),
  CLUSTER_STREAM: 'KB_SHARDS',
  CLUSTER_REPLICAS: '1',
  CLUSTER_SHARDS: String(SHARDS),
  NODE_SHARDS: String(i),
  NODE_ID: `node-${'ab'[i]}`,
  CLUSTER_JOB_ACK_WAIT_MS: '3000',
  CLUSTER_JOB_SWEEP_MS: '1000',
  SNAPSHOT_ON_SHUTDOWN: 'false',
  RATE_LIMIT_RPS: '0',
  // Node A lists the live nodes' addresses in /ready; node B, as by default, only their count.
  ...(i === 0 ? { READY_DETAILS: 'true' } : {}),
  // Small, for the quota test (org_other); org_test stays below it.
  MAX_CONTENTS_PER_ORG: '6',
  ...extra,
});

async function startNode(i: number): Promise<TestServer> {
  dataDirs[i] ??= TestServer.tempDir();
  nodes[i] = await TestServer.start({ dataDir: dataDirs[i], env: env(i) });
  return nodes[i]!;
}

/** Until both nodes have applied the knowledge base (the holder of its shard may trail the node that made it). */
async function onBothNodes(kbId: string, auth?: { org: string; key: string }): Promise<void> {
  for (const node of nodes)
    await eventually(
      `${kbId} on ${node.url}`,
      () => node.api('GET', '/api/v1/knowledge-bases', undefined, auth),
      (r) => r.body.data?.some((k: { id: string }) => k.id === kbId),
      10_000,
    );
}

/** Knowledge bases made through node A until there is one on each shard: [shard 0, shard 1]. */
const kbOnShard: string[] = [];
/** The same for org_other (the quota test). */
const otherKbOnShard: string[] = [];

beforeAll(async () => {
  if (!existsSync(NATS_SERVER)) throw new Error(`${NATS_SERVER} is missing: run "bun scripts/test-deps.ts"`);
  nats = await NatsCluster.start(1);
  await Promise.all([0, 1].map(startNode));
  // Each node lists the other among the live nodes before anything is forwarded.
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
  for (const kb of kbOnShard) await onBothNodes(kb);
}, 120_000);

afterAll(async () => {
  for (const n of nodes) await n?.kill9();
  for (const n of nodes) n?.cleanup();
  await nats?.stop();
});

/** Ready items a node holds, from its /metrics. */
const readyOn = async (node: TestServer) => Number(/^kb_contents\{status="ready"\} (\d+)$/m.exec(await (await fetch(`${node.url}/metrics`)).text())?.[1]);

const TEXTS = [
  'Tidal forces stretch the oceans twice a day as the moon passes overhead.',
  'Sourdough needs a lively starter, patience and a very hot oven.',
  'Glaciers carve U-shaped valleys while rivers cut V-shaped ones.',
];

describe('sharded cluster: node A holds shard 0, node B shard 1', () => {
  test("/ready tells each node's shards and the live nodes", async () => {
    // /ready answers 503 while NATS is slow to answer (a loaded machine): read it once it is 200.
    const [a, b] = await Promise.all(
      nodes.map((n) =>
        eventually(
          `${n.url} ready`,
          () => n.api('GET', '/ready'),
          (r) => r.status === 200,
        ),
      ),
    );
    expect(a!.body.cluster.shards).toEqual({ count: 2, held: [0] });
    expect(b!.body.cluster.shards).toEqual({ count: 2, held: [1] });
    // /ready needs no key: where the nodes answer is shown only with READY_DETAILS=true.
    expect(b!.body.cluster.liveNodeCount).toBe(2);
    expect(b!.body.cluster.liveNodes).toBeUndefined();
    const live = a!.body.cluster.liveNodes.map((n: { nodeId: string; shards: number[]; url: string }) => [n.nodeId, n.shards, n.url]).sort();
    expect(live).toEqual([
      ['node-a', [0], nodes[0]!.url],
      ['node-b', [1], nodes[1]!.url],
    ]);
    const metrics = await (await fetch(`${nodes[0]!.url}/metrics`)).text();
    expect(metrics).toMatch(/^kb_cluster_shards_held 1$/m);
    expect(metrics).toMatch(/^kb_cluster_live_nodes 2$/m);
  });

  test('knowledge bases are listed alike on every node, whatever their shard', async () => {
    const [a, b] = await Promise.all(nodes.map((n) => n.api('GET', '/api/v1/knowledge-bases')));
    expect(a!.status).toBe(200);
    expect(b!.body).toEqual(a!.body);
    expect(kbOnShard.length).toBe(2);
  });

  test('writes, reads and searches of a knowledge base on the other shard are forwarded and answer as its holder does', async () => {
    const kb = kbOnShard[1]!; // held by B; every request goes to A
    const ids: string[] = [];
    for (const text of TEXTS) {
      const res = await nodes[0]!.api('POST', `/api/v1/knowledge-bases/${kb}/contents?wait=true`, { text, metadata: { n: ids.length } });
      expect(res.status).toBe(201);
      expect(res.body.data.status).toBe('ready');
      ids.push(res.body.data.id);
    }
    // Read-your-writes through the forwarding node, and the same answers from the holder.
    for (const path of [`/api/v1/knowledge-bases/${kb}/contents`, `/api/v1/knowledge-bases/${kb}/contents/${ids[1]}`, `/api/v1/knowledge-bases/${kb}`]) {
      const [viaA, atB] = await Promise.all(nodes.map((n) => n.api('GET', path)));
      expect(viaA!.status).toBe(200);
      expect(viaA!.body).toEqual(atB!.body);
    }
    const search = { query: 'moon tides oceans', limit: 3 };
    const viaA = await nodes[0]!.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, search);
    const atB = await nodes[1]!.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, search);
    expect(viaA.status).toBe(200);
    expect(viaA.body.data[0].contentId).toBe(ids[0]);
    expect(viaA.body.data).toEqual(atB.body.data);
    // An update and a delete through A.
    const put = await nodes[0]!.api('PUT', `/api/v1/knowledge-bases/${kb}/contents/${ids[2]}?wait=true`, { text: 'Moraines mark where a glacier stopped.' });
    expect(put.status).toBe(200);
    expect((await nodes[1]!.api('GET', `/api/v1/knowledge-bases/${kb}/contents/${ids[2]}`)).body.data.contentChunk).toBe(
      'Moraines mark where a glacier stopped.',
    );
    expect((await nodes[0]!.api('DELETE', `/api/v1/knowledge-bases/${kb}/contents/${ids[1]}`)).status).toBe(200);
    expect((await nodes[1]!.api('GET', `/api/v1/knowledge-bases/${kb}/contents/${ids[1]}`)).status).toBe(404);
    // Bad input is answered 4xx in the envelope, as the holder answers it.
    const bad = await nodes[0]!.api('POST', `/api/v1/knowledge-bases/${kb}/contents`, { text: '' });
    expect(bad.status).toBe(400);
    expect(bad.body.success).toBe(false);
    // HTTP/1.0 without a Host header, forwarded like any other request (it answered 500 "Invalid URL").
    const raw = await http10(
      nodes[0]!,
      `GET /api/v1/knowledge-bases/${kb}/contents/${ids[0]} HTTP/1.0\r\nx-service-organization-id: ${ORG}\r\nx-service-api-key: ${KEY}\r\n\r\n`,
    );
    expect(raw.status, raw.text).toBe(200);
    expect(JSON.parse(raw.text.split('\r\n\r\n')[1]!).data.id).toBe(ids[0]);
  }, 60_000);

  test('a knowledge base made through a node takes writes through it at once, forwarded to a holder that catches up first', async () => {
    let made = 0;
    for (let n = 0; made < 10 && n < 200; n++) {
      const res = await nodes[0]!.api('POST', '/api/v1/knowledge-bases', { name: `fresh ${n}`, type: 'TEXT_COST_EFFECTIVE' });
      expect(res.status).toBe(201);
      const kb = res.body.data.id as string;
      if (shardOf(kb, SHARDS) !== 1) {
        expect((await nodes[0]!.api('DELETE', `/api/v1/knowledge-bases/${kb}`)).status).toBe(200);
        continue;
      }
      made++;
      // No wait in between: node B may not have applied the creation yet when the write reaches it.
      const write = await nodes[0]!.api('POST', `/api/v1/knowledge-bases/${kb}/contents`, { text: `written at once ${n}` });
      expect(write.status).toBe(201);
      expect((await nodes[0]!.api('DELETE', `/api/v1/knowledge-bases/${kb}`)).status).toBe(200);
    }
    expect(made).toBe(10);
  });

  test('an uploaded file is forwarded as it streams in', async () => {
    const kb = kbOnShard[1]!;
    const form = new FormData();
    form.append('file', new File(['Basalt columns form as thick lava cools and cracks.'], 'basalt.txt', { type: 'text/plain' }));
    form.append('metadata', JSON.stringify({ kind: 'upload' }));
    const res = await fetch(`${nodes[0]!.url}/api/v1/knowledge-bases/${kb}/contents/file?wait=true`, {
      method: 'POST',
      headers: { 'x-service-organization-id': 'org_test', 'x-service-api-key': 'test-key-0123456789' },
      body: form,
    });
    const body = (await res.json()) as { data: { id: string; status: string } };
    expect(res.status).toBe(201);
    expect(body.data.status).toBe('ready');
    const item = await nodes[1]!.api('GET', `/api/v1/knowledge-bases/${kb}/contents/${body.data.id}`);
    expect(item.body.data.metadata).toEqual({ kind: 'upload' });
    expect(item.body.data.contentChunk).toContain('Basalt columns');
  });

  test('content is kept and indexed only by the holders of its shard', async () => {
    const own = await nodes[0]!.api('POST', `/api/v1/knowledge-bases/${kbOnShard[0]}/contents?wait=true`, { text: 'Shard zero keeps this one.' });
    expect(own.status).toBe(201);
    expect(own.body.data.status).toBe('ready');
    // kb_contents counts what a node holds: A one item (shard 0), B the three of shard 1.
    expect(await readyOn(nodes[0]!)).toBe(1);
    expect(await readyOn(nodes[1]!)).toBe(3);
    // In the one stream, knowledge-base records and each shard's content go to subjects of their own.
    const nc = await connect({ servers: nats.urls });
    try {
      const jsm = await jetstreamManager(nc);
      const lastOn = async (subject: string) => (await jsm.streams.getMessage('KB_SHARDS', { last_by_subj: subject }))?.seq ?? 0;
      for (const subject of ['KB_SHARDS.records.kb', 'KB_SHARDS.records.s0', 'KB_SHARDS.records.s1']) expect(await lastOn(subject)).toBeGreaterThan(0);
      // The newest record of all: the indexed record of the shard-0 item just written.
      expect(await lastOn('KB_SHARDS.records.s0')).toBe((await jsm.streams.info('KB_SHARDS')).state.last_seq);
    } finally {
      await nc.close();
    }
  });

  test('authentication comes before forwarding; a forwarded request is not forwarded again', async () => {
    const kb = kbOnShard[1]!;
    const stranger = await nodes[0]!.api('GET', `/api/v1/knowledge-bases/${kb}/contents`, undefined, { org: 'org_test', key: 'wrong-key-0000000000' });
    expect(stranger.status).toBe(401);
    const other = await nodes[0]!.api('GET', `/api/v1/knowledge-bases/${kb}/contents`, undefined, { org: 'org_other', key: 'other-key-9876543210' });
    expect(other.status).toBe(404); // another organization's knowledge base, answered by its holder
    const looped = await nodes[0]!.api('GET', `/api/v1/knowledge-bases/${kb}/contents`, undefined, undefined, { 'x-kb-forwarded-by': 'node-x' });
    expect(looped.status).toBe(503);
    expect(looped.body.error.code).toBe('NOT_READY');
  });

  test('the content quota counts the items of every shard, wherever the write lands', async () => {
    const other = { org: 'org_other', key: 'other-key-9876543210' };
    for (let n = 0; otherKbOnShard.filter(Boolean).length < SHARDS && n < 64; n++) {
      const res = await nodes[0]!.api('POST', '/api/v1/knowledge-bases', { name: `quota ${n}`, type: 'TEXT_COST_EFFECTIVE' }, other);
      expect(res.status).toBe(201);
      otherKbOnShard[shardOf(res.body.data.id, SHARDS)] ??= res.body.data.id;
    }
    for (const kb of otherKbOnShard) await onBothNodes(kb, other);
    // Three items on each shard, each written at its holder: six, the quota.
    for (const [shard, kb] of otherKbOnShard.entries()) {
      for (let i = 0; i < 3; i++)
        expect((await nodes[shard]!.api('POST', `/api/v1/knowledge-bases/${kb}/contents`, { text: `quota item ${i}` }, other)).status).toBe(201);
    }
    const caughtUp = () =>
      eventually(
        'both nodes at the stream head',
        () => Promise.all(nodes.map((n) => n.api('GET', '/ready'))),
        (rs) => rs.every((r) => r.body.cluster?.lag === 0 && r.body.cluster.appliedSeq === rs[0]!.body.cluster.appliedSeq),
      );
    await caughtUp();
    // A seventh is refused on either shard, sent to either node: each holder counts the other shard's items.
    for (const node of nodes) {
      for (const kb of otherKbOnShard) {
        const res = await node.api('POST', `/api/v1/knowledge-bases/${kb}/contents`, { text: 'one too many' }, other);
        expect(res.status).toBe(403);
        expect(res.body.error.code).toBe('QUOTA_EXCEEDED');
      }
    }
    // One deleted on shard 1 makes room on shard 0.
    const list = await nodes[0]!.api('GET', `/api/v1/knowledge-bases/${otherKbOnShard[1]}/contents`, undefined, other);
    expect((await nodes[0]!.api('DELETE', `/api/v1/knowledge-bases/${otherKbOnShard[1]}/contents/${list.body.data[0].id}`, undefined, other)).status).toBe(200);
    await caughtUp();
    expect((await nodes[0]!.api('POST', `/api/v1/knowledge-bases/${otherKbOnShard[0]}/contents`, { text: 'room again' }, other)).status).toBe(201);
  }, 60_000);

  test('with the holder killed the answer is 503 at once; after its restart from the stream the same answers come back', async () => {
    const kb = kbOnShard[1]!;
    const search = { query: 'basalt lava', limit: 5 };
    const before = await nodes[0]!.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, search);
    expect(before.status).toBe(200);
    await nodes[1]!.kill9();
    const down = await nodes[0]!.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, search);
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe('NOT_READY');
    expect(down.headers.get('retry-after')).toBe('1');
    // Shard 0 goes on answering.
    expect((await nodes[0]!.api('GET', `/api/v1/knowledge-bases/${kbOnShard[0]}/contents`)).status).toBe(200);
    const b = await startNode(1);
    await eventually(
      'B live again on A',
      () => nodes[0]!.api('GET', '/ready'),
      (r) => r.body.cluster?.liveNodes?.some((n: { url: string }) => n.url === b.url),
    );
    const after = await nodes[0]!.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, search);
    expect(after.status).toBe(200);
    expect(after.body.data).toEqual(before.body.data);
  }, 60_000);

  test("a snapshot holds its node's shards; a new node starts only from one holding its own", async () => {
    const s3 = await startS3();
    const joined: TestServer[] = [];
    try {
      // Node A snapshots on a graceful stop into its folder of the bucket, then rejoins.
      const metricsA = await (await fetch(`${nodes[0]!.url}/metrics`)).text();
      const itemsOnA = [...metricsA.matchAll(/^kb_contents\{status="\w+"\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
      expect(itemsOnA).toBeGreaterThan(0);
      await nodes[0]!.stop();
      nodes[0] = await TestServer.start({ dataDir: dataDirs[0], env: { ...env(0), ...s3.env, SNAPSHOT_ON_SHUTDOWN: 'true' } });
      expect(await nodes[0]!.stop()).toBe(0);
      await startNode(0);
      const store = new S3ClusterSnapshots(s3.store);
      const [stored] = await store.list();
      const manifest = await S3ClusterSnapshots.ofNode(s3.store, 'node-a').manifest(stored!.seq);
      expect(manifest.shards).toEqual({ count: 2, held: [0] });
      expect(manifest.stats.contents).toBe(itemsOnA); // shard 0's items, none of shard 1's

      // A new holder of shard 1 must not start from A's snapshot: it replays the stream instead.
      const c = await TestServer.start({ env: { ...env(1, { NODE_ID: 'node-c' }), ...s3.env } });
      joined.push(c);
      expect(c.output.join('\n')).toContain('lacks shards this node holds');
      expect((await c.api('GET', '/ready')).body.recovery.snapshot).toBeUndefined();
      // A new holder of shard 0 starts from it.
      const d = await TestServer.start({ env: { ...env(0, { NODE_ID: 'node-d' }), ...s3.env } });
      joined.push(d);
      expect((await d.api('GET', '/ready')).body.recovery.snapshot.seq).toBe(stored!.seq);
      // A's snapshot kept org_other's shard-1 items as a census: D counts them against the quota.
      const other = { org: 'org_other', key: 'other-key-9876543210' };
      const refused = await d.api('POST', `/api/v1/knowledge-bases/${otherKbOnShard[0]}/contents`, { text: 'one too many' }, other);
      expect(refused.status).toBe(403);
      // A node holding every shard snapshots too; a new holder of shard 1 then starts from that
      // snapshot and keeps only shard 1's content of it.
      const all = await TestServer.start({ env: { ...env(0, { NODE_ID: 'node-all', NODE_SHARDS: 'all', SNAPSHOT_ON_SHUTDOWN: 'true' }), ...s3.env } });
      joined.push(all);
      expect(await all.stop()).toBe(0);
      const allSeq = (await S3ClusterSnapshots.ofNode(s3.store, 'node-all').list())[0]!.seq;
      const e = await TestServer.start({ env: { ...env(1, { NODE_ID: 'node-e' }), ...s3.env } });
      joined.push(e);
      expect((await e.api('GET', '/ready')).body.recovery.snapshot.seq).toBe(allSeq);
      for (const [node, kb, holder] of [
        [c, kbOnShard[1]!, nodes[1]!],
        [d, kbOnShard[0]!, nodes[0]!],
        [e, kbOnShard[1]!, nodes[1]!],
      ] as const) {
        const path = `/api/v1/knowledge-bases/${kb}/contents`;
        const mine = await eventually(
          `${path} on the new node`,
          () => node.api('GET', path),
          (r) => r.status === 200 && r.body.data.every((i: { status: string }) => i.status === 'ready'),
        );
        expect(mine.body).toEqual((await holder.api('GET', path)).body);
        expect(mine.body.total).toBeGreaterThan(0);
      }
      expect(await readyOn(e)).toBe(await readyOn(nodes[1]!));
    } finally {
      for (const n of joined) {
        await n.kill9();
        n.cleanup();
      }
      await s3.stop();
    }
  }, 120_000);

  test('a node configured with another shard count refuses the stream', async () => {
    const dir = TestServer.tempDir();
    const odd = await TestServer.start({ dataDir: dir, env: env(0, { CLUSTER_SHARDS: '3', NODE_ID: 'node-odd' }), waitReady: false });
    try {
      expect(await odd.proc.exited).toBe(1);
      expect(odd.output.join('\n')).toContain('was made for 2 shard(s); this node is configured with CLUSTER_SHARDS=3');
    } finally {
      odd.cleanup();
    }
  });
});

/** A request written as is to the node's socket; the answer's status and whole text. */
async function http10(node: TestServer, request: string): Promise<{ status: number; text: string }> {
  const { connect: connectTcp } = await import('node:net');
  const url = new URL(node.url);
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = connectTcp(Number(url.port), url.hostname, () => socket.write(request));
    socket.setTimeout(30_000, () => socket.destroy(new Error('no answer in 30 s')));
    socket.on('data', (d) => (text += d.toString()));
    socket.on('close', () => resolve({ status: Number(text.split(' ')[1] ?? 0), text }));
    socket.on('error', reject);
  });
}
