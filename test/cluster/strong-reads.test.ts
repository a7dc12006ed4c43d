// Strong reads across cluster nodes (x-kb-consistency: strong, src/http/consistency.ts) on a
// cluster of their own: three real server processes on a three-server NATS JetStream cluster.
// Node 2 is held still (SIGSTOP) while node 1 takes writes, so it lags when asked; the test after
// it in a shared cluster would meet a node that was stopped, so this one shares nothing.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { NATS_SERVER, NatsCluster } from '../helpers/nats';
import { TestServer } from '../helpers/server';

let nats: NatsCluster;
const nodes: TestServer[] = [];

beforeAll(async () => {
  // Installed by the README's test command (scripts/test-deps.ts): fail, never skip, without it.
  if (!existsSync(NATS_SERVER)) throw new Error(`${NATS_SERVER} is missing: run "bun scripts/test-deps.ts"`);
  nats = await NatsCluster.start(3);
  const env = (i: number): Record<string, string> => ({
    CLUSTER_NATS_URLS: nats.urls.join(','),
    CLUSTER_STREAM: 'KB_STRONG',
    CLUSTER_REPLICAS: '3',
    NODE_ID: `node-${i + 1}`,
    SNAPSHOT_ON_SHUTDOWN: 'false',
    RATE_LIMIT_RPS: '0',
  });
  nodes.push(...(await Promise.all([0, 1, 2].map((i) => TestServer.start({ env: env(i) })))));
}, 120_000);

afterAll(async () => {
  // A failure may have left node 2 stopped.
  for (const n of nodes) n.proc.kill('SIGCONT');
  for (const n of nodes) await n.kill9();
  for (const n of nodes) n.cleanup();
  await nats?.stop();
});

test('a strong read (x-kb-consistency: strong) on another node sees every write answered before it, at once', async () => {
  const [n1, n2, n3] = nodes as [TestServer, TestServer, TestServer];
  const created = await n1.api('POST', '/api/v1/knowledge-bases', { name: 'strong reads', type: 'TEXT_COST_EFFECTIVE' });
  expect(created.status).toBe(201);
  const kbId = created.body.data.id as string;
  const strong = { 'x-kb-consistency': 'strong' };
  let written = 0;
  let eventualShort = 0;
  for (let round = 0; round < 5; round++) {
    // Node 2 is held still while node 1 takes the writes: it has them to apply when it goes on.
    process.kill(n2.proc.pid, 'SIGSTOP');
    const added = await Promise.all(
      Array.from({ length: 300 }, (_, i) => n1.api('POST', `/api/v1/knowledge-bases/${kbId}/contents`, { text: `round ${round} item ${i}` })),
    );
    expect(added.every((r) => r.status === 201)).toBe(true);
    written += added.length;
    process.kill(n2.proc.pid, 'SIGCONT');
    // Asked the moment node 2 goes on: an eventual read may trail (counted, not required).
    const [eventual, ...reads] = await Promise.all([
      n2.api('GET', `/api/v1/knowledge-bases/${kbId}/contents?limit=1`),
      ...[n2, n3].map((n) => n.api('GET', `/api/v1/knowledge-bases/${kbId}/contents?limit=1`, undefined, undefined, strong)),
    ]);
    if (eventual!.body.total < written) eventualShort++;
    for (const read of reads) {
      expect(read.status).toBe(200);
      expect(read.body.total).toBe(written);
    }
  }
  console.log(`strong reads: ${written} writes in 5 rounds; eventual reads short in ${eventualShort} of 5`);
  // A value that means nothing is refused, before anything is done.
  const bad = await n2.api('POST', `/api/v1/knowledge-bases/${kbId}/contents`, { text: 'refused' }, undefined, { 'x-kb-consistency': 'linearizable' });
  expect(bad.status).toBe(400);
  expect(bad.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
  expect(bad.body.error.message).toContain('x-kb-consistency');
  expect((await n2.api('GET', `/api/v1/knowledge-bases/${kbId}/contents?limit=1`, undefined, undefined, strong)).body.total).toBe(written);
});
