// Re-embedding in a cluster (issue 23): two real server processes on one JetStream server. Both are
// restarted with another model serving the type, and both ask for the build at start-up: it is
// logged once, its jobs go to the shared queue, each item is embedded with the new model once in the
// whole cluster (counted by kb_chunks_embedded_total over both nodes), both nodes answer from the old
// configuration meanwhile and switch to the same new configuration once it is complete.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeTinyModel } from '../fixtures/tiny-model';
import { eventually } from '../helpers/eventually';
import { NATS_SERVER, NatsCluster } from '../helpers/nats';
import { TestServer } from '../helpers/server';

const API = '/api/v1';
const ITEMS = 300;
let nats: NatsCluster;
let modelDir: string;
const nodes: TestServer[] = [];
const dataDirs = [TestServer.tempDir(), TestServer.tempDir()];

const env = (i: number, model: string): Record<string, string> => ({
  CLUSTER_NATS_URLS: nats.urls.join(','),
  CLUSTER_STREAM: 'KB_REEMBED',
  CLUSTER_REPLICAS: '1',
  NODE_ID: `node-${i + 1}`,
  CLUSTER_JOB_ACK_WAIT_MS: '3000',
  CLUSTER_JOB_SWEEP_MS: '1000',
  SNAPSHOT_ON_SHUTDOWN: 'false',
  RATE_LIMIT_RPS: '0',
  EMBEDDING_MODEL_DIR: modelDir,
  HIGH_QUALITY_MODEL: `transformers:${model}`,
});

const startAll = (model: string) => Promise.all([0, 1].map(async (i) => (nodes[i] = await TestServer.start({ dataDir: dataDirs[i], env: env(i, model) }))));

/** Chunks embedded by `model` on a node since it started (kb_chunks_embedded_total). */
async function embeddedBy(node: TestServer, model: string): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`kb_chunks_embedded_total{model="${model}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

beforeAll(async () => {
  if (!existsSync(NATS_SERVER)) throw new Error(`${NATS_SERVER} is missing: run "bun scripts/test-deps.ts"`);
  modelDir = mkdtempSync(join(tmpdir(), 'kb-reembed-models-'));
  await writeTinyModel(modelDir, { modelId: 'test/tiny-old', dimensions: 32, seed: 1 });
  await writeTinyModel(modelDir, { modelId: 'test/tiny-new', dimensions: 48, seed: 2 });
  nats = await NatsCluster.start(1);
  await startAll('test/tiny-old');
}, 120_000);

afterAll(async () => {
  for (const n of nodes) await n?.kill9();
  for (const d of dataDirs) rmSync(d, { recursive: true, force: true });
  await nats?.stop();
  rmSync(modelDir, { recursive: true, force: true });
});

describe('re-embedding in a cluster', () => {
  test('both nodes ask at start-up: one build, each item embedded once in the cluster, both switch to it', async () => {
    const created = await nodes[0]!.api('POST', `${API}/knowledge-bases`, { name: 'Notes', type: 'TEXT_HIGH_QUALITY' });
    const kb = created.body.data.id as string;
    for (let i = 0; i < ITEMS; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, j) =>
          nodes[(i + j) % 2]!.api('POST', `${API}/knowledge-bases/${kb}/contents`, { text: `Note ${i + j} about a car and a dog.` }),
        ),
      );
    }
    for (const node of nodes)
      await eventually(
        `all ready on ${node.url}`,
        () => node.api('GET', `${API}/knowledge-bases/${kb}`),
        (r) => r.body.data?.ingestion.contents.ready === ITEMS,
        60_000,
      );
    const oldConfig = (await nodes[0]!.api('GET', `${API}/knowledge-bases/${kb}/configuration`)).body.data;

    await Promise.all(nodes.map((n) => n.stop()));
    await startAll('test/tiny-new');
    // Both answer searches all along: from the old configuration until the switch, then the new.
    let searching = true;
    const failed: unknown[] = [];
    let searches = 0;
    const searchers = nodes.map(async (node) => {
      while (searching) {
        const search = await node.api('POST', `${API}/knowledge-bases/${kb}/search/semantic`, { query: 'automobile', limit: 3 });
        searches++;
        if (search.status !== 200 || search.body.data.length !== 3) failed.push({ status: search.status, body: search.body });
      }
    });
    let switched: { body: any }[];
    try {
      switched = await Promise.all(
        nodes.map((node) =>
          eventually(
            `switched on ${node.url}`,
            () => node.api('GET', `${API}/knowledge-bases/${kb}/configuration`),
            (r) => r.body.data?.embedding.model === 'test/tiny-new',
            120_000,
          ),
        ),
      );
    } finally {
      searching = false;
      await Promise.all(searchers);
    }
    console.log(`[reembed-cluster] ${searches} semantic searches during the build, ${failed.length} failed`);
    expect(failed.slice(0, 3)).toEqual([]);
    // One configuration for the whole cluster.
    expect(switched[0]!.body.data.id).toBe(switched[1]!.body.data.id);
    expect(switched[0]!.body.data.id).not.toBe(oldConfig.id);
    for (const node of nodes) {
      const read = (await node.api('GET', `${API}/knowledge-bases/${kb}`)).body.data;
      expect(read.reembedding).toBeNull();
      expect(read.ingestion.contents.ready).toBe(ITEMS);
      expect((await node.api('POST', `${API}/knowledge-bases/${kb}/search/semantic`, { query: 'automobile', limit: 3 })).body.data.length).toBe(3);
    }
    const perNode = await Promise.all(nodes.map((n) => embeddedBy(n, 'test/tiny-new')));
    console.log(`[reembed-cluster] ${ITEMS} items re-embedded: ${perNode.join(' + ')} chunks by node 1 + node 2`);
    expect(perNode[0]! + perNode[1]!).toBe(ITEMS);
  }, 300_000);
});
