// In cluster mode too, one organization's indexing backlog must not hold back another's small write.
// Indexing jobs wait in a JetStream work queue, first in first out, and a node pulls only about
// two batches per document worker ahead, and its own fair queue (engine/ingest/fair-queue.ts)
// sees no further. While a knowledge base and its organization have few items waiting, their jobs
// go to a lane of their own (engine/ingest/jetstream-jobs.ts), pulled before the backlogs. One node
// on one NATS server: the order of the work queue is what is tested, not replication.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { NATS_SERVER, NatsCluster } from '../helpers/nats';
import { OTHER_KEY, OTHER_ORG, TestServer } from '../helpers/server';

let nats: NatsCluster;
let node: TestServer;
const B = { org: OTHER_ORG, key: OTHER_KEY };
/** Organization B's backlog: several times what one node holds ahead (about 60 items with one document worker). */
const BACKLOG = 240;

beforeAll(async () => {
  if (!existsSync(NATS_SERVER)) throw new Error(`${NATS_SERVER} is missing: run "bun scripts/test-deps.ts"`);
  nats = await NatsCluster.start(1);
  node = await TestServer.start({
    env: { CLUSTER_NATS_URLS: nats.urls.join(','), CLUSTER_STREAM: 'KB_FAIR', CLUSTER_REPLICAS: '1', NODE_ID: 'node-1', RATE_LIMIT_RPS: '0' },
  });
}, 120_000);

afterAll(async () => {
  await node?.kill9();
  node?.cleanup();
  await nats?.stop();
});

async function createKb(name: string, auth?: typeof B): Promise<string> {
  const res = await node.api('POST', '/api/v1/knowledge-bases', { name, type: 'TEXT_COST_EFFECTIVE' }, auth);
  expect(res.status).toBe(201);
  return res.body.data.id;
}

async function statuses(kbId: string, auth?: typeof B): Promise<Record<'pending' | 'processing' | 'ready' | 'failed', number>> {
  const res = await node.api('GET', `/api/v1/knowledge-bases/${kbId}`, undefined, auth);
  expect(res.status).toBe(200);
  return res.body.data.ingestion.contents;
}

const WORDS = 'river mountain lantern copper meadow harbor violet engine canyon thunder marble orchard glacier pepper falcon'.split(' ');
function text(tag: string, i: number): string {
  let out = `${tag} note ${i} about okapis. `;
  for (let k = i; out.length < 1200; k++) out += `The ${WORDS[k % 15]} near the ${WORDS[(k * 7 + 3) % 15]} was ${WORDS[((k + i) * 11 + 5) % 15]} on day ${k}. `;
  return out;
}

/**
 * Organization B queues BACKLOG items (8 writes at a time) into its knowledge bases in turn, then
 * A adds one item: how many of B's were indexed after A's was queued and before it was ready, and
 * how many of B's were still waiting then.
 */
async function aBehindB(kbA: string, kbsB: string[]): Promise<{ overtaking: number; waiting: number }> {
  const readyB = async () => {
    let ready = 0;
    for (const kb of kbsB) {
      const s = await statuses(kb, B);
      ready += s.ready + s.failed;
    }
    return ready;
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < BACKLOG) {
        const i = next++;
        expect((await node.api('POST', `/api/v1/knowledge-bases/${kbsB[i % kbsB.length]}/contents`, { text: text('B', i) }, B)).status).toBe(201);
      }
    }),
  );
  const added = await node.api('POST', `/api/v1/knowledge-bases/${kbA}/contents`, { text: text('A', next) });
  expect(added.status).toBe(201);
  const before = await readyB();
  for (;;) {
    const [a, ready] = await Promise.all([node.api('GET', `/api/v1/knowledge-bases/${kbA}/contents/${added.body.data.id}`), readyB()]);
    expect(a.body.data.status).not.toBe('failed');
    if (a.body.data.status === 'ready') return { overtaking: ready - before, waiting: BACKLOG - ready };
    await Bun.sleep(25);
  }
}

/** Until every item of the knowledge bases is indexed (the next test starts from an empty queue). */
async function drained(kbs: string[], auth?: typeof B): Promise<void> {
  for (const kb of kbs) {
    for (;;) {
      const s = await statuses(kb, auth);
      if (s.pending + s.processing === 0) break;
      await Bun.sleep(100);
    }
  }
}

let kbA: string;
beforeAll(async () => {
  kbA = await createKb('A small');
  // The model loaded, so that what follows measures indexing alone.
  expect((await node.api('POST', `/api/v1/knowledge-bases/${kbA}/contents?wait=true`, { text: text('warm', 0) })).body.data.status).toBe('ready');
}, 60_000);

test("an organization's single item is indexed before another organization's backlog queued ahead of it in the cluster", async () => {
  const kbB = await createKb('B backlog', B);
  const { overtaking, waiting } = await aBehindB(kbA, [kbB]);
  console.log(
    `[fair-jobs] one knowledge base: B's items indexed after A's was queued and before it was ready: ${overtaking}; still waiting then: ${waiting} of ${BACKLOG}`,
  );
  // About the two batches in the worker when A's job came, and one more at most: never the backlog
  // behind them in the work queue (212 of the 240 went first when the cluster had one queue).
  expect(overtaking).toBeLessThanOrEqual(64);
  expect(waiting).toBeGreaterThan(BACKLOG / 2);
  await drained([kbB], B);
}, 300_000);

test('the same with the backlog spread over many small knowledge bases of the organization', async () => {
  const kbsB = [];
  for (let i = 0; i < 24; i++) kbsB.push(await createKb(`B part ${i}`, B));
  const { overtaking, waiting } = await aBehindB(kbA, kbsB);
  console.log(
    `[fair-jobs] 24 knowledge bases of 10 items: B's items indexed after A's was queued and before it was ready: ${overtaking}; still waiting then: ${waiting} of ${BACKLOG}`,
  );
  expect(overtaking).toBeLessThanOrEqual(64);
  expect(waiting).toBeGreaterThan(BACKLOG / 2);
}, 300_000);
