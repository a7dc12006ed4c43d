// Cluster bench (issue 15): write acknowledgements per second and their p99 for a single node (log
// on local disk), one node on a three-server JetStream cluster, and three nodes (writes spread over
// them); full-text search q/s on one node vs spread over three; replication lag (an acknowledged
// write on node 1 until node 2 serves it), p50/p99. Real processes on loopback, as the tests run
// them (test/helpers): numbers compare settings on one machine, not machines.
// The join part: three nodes index --join-chunks chunks (hashed embeddings over HTTP, so the bench
// measures joining, not a model), node 1 snapshots into S3 (s3rver) on a graceful stop, more items
// are written, then a fourth node with an empty disk starts: the time until it answers /ready (and
// the same from the stream alone, without the store).
// The shards part: two nodes with two shards, one each; writes and searches sent to the holder vs
// to the other node, which forwards them (the cost of a hop).
//
//   bun bench/cluster.ts [--parts throughput,join,shards] [--seconds 10] [--concurrency 16] [--join-chunks 100000]
import { parseArgs } from 'node:util';
import { NatsCluster } from '../support/nats';
import { startS3 } from '../support/s3';
import { TestServer } from '../support/server';
import { shardOf } from '../engine';
import { HASH_DIMENSIONS, HASH_MODEL, startHashEmbedder } from './lib/hash-embed';

const { values } = parseArgs({
  options: {
    parts: { type: 'string', default: 'throughput,join,shards' },
    seconds: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '16' },
    'join-chunks': { type: 'string', default: '100000' },
  },
});
const parts = new Set(values.parts.split(','));
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const joinChunks = Number(values['join-chunks']);

const quiet = { RATE_LIMIT_RPS: '0', SNAPSHOT_ON_SHUTDOWN: 'false', INGEST_WORKERS: '1' };
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

/** `concurrency` loops calling `op` on the nodes in turn for `seconds`; ops/s and latency percentiles. */
async function load(nodes: TestServer[], op: (node: TestServer, i: number) => Promise<boolean>) {
  const latencies: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  let failures = 0;
  let n = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      while (performance.now() < deadline) {
        const i = n++;
        const started = performance.now();
        if (await op(nodes[(w + i) % nodes.length]!, i)) latencies.push(performance.now() - started);
        else failures++;
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { perSecond: Math.round(latencies.length / seconds), p50: percentile(latencies, 50).toFixed(2), p99: percentile(latencies, 99).toFixed(2), failures };
}

// Full-text only: the bench measures the log and replication, not embedding.
const newKb = async (node: TestServer) =>
  (await node.api('POST', '/api/v1/knowledge-bases', { name: 'bench', type: 'TEXT_COST_EFFECTIVE' })).body.data.id as string;
const write = (kbId: string) => async (node: TestServer, i: number) =>
  (await node.api('POST', `/api/v1/knowledge-bases/${kbId}/contents`, { text: `Bench note ${i}: the ferry leaves the harbour at ${i % 24} o'clock.` }))
    .status === 201;
const search = (kbId: string) => async (node: TestServer, i: number) =>
  (await node.api('POST', `/api/v1/knowledge-bases/${kbId}/search/full-text`, { query: ['ferry harbour', 'bench note', 'clock leaves'][i % 3] })).status ===
  200;

const rows: string[] = [];
const report = (what: string, r: { perSecond: number; p50: string; p99: string; failures: number }) => {
  const line = `${what.padEnd(44)} ${String(r.perSecond).padStart(7)}/s   p50 ${r.p50.padStart(7)} ms   p99 ${r.p99.padStart(7)} ms${r.failures ? `   (${r.failures} failed)` : ''}`;
  rows.push(line);
  console.log(line);
};

async function throughput() {
  // 1. A single node, its log on local disk.
  {
    const single = await TestServer.start({ env: quiet });
    const kbId = await newKb(single);
    report('writes, single node (local log)', await load([single], write(kbId)));
    report('full-text search, single node', await load([single], search(kbId)));
    await single.kill9();
    single.cleanup();
  }

  // 2. One and three nodes on a three-server JetStream cluster (replicas 3).
  const nats = await NatsCluster.start(3);
  const clusterEnv = (i: number, stream: string) => ({
    ...quiet,
    CLUSTER_NATS_URLS: nats.urls.join(','),
    CLUSTER_STREAM: stream,
    CLUSTER_REPLICAS: '3',
    NODE_ID: `bench-${i}`,
  });
  try {
    {
      const one = await TestServer.start({ env: clusterEnv(1, 'BENCH_ONE') });
      const kbId = await newKb(one);
      report('writes, one node on JetStream (R3)', await load([one], write(kbId)));
      await one.kill9();
      one.cleanup();
    }
    const nodes = await Promise.all([1, 2, 3].map((i) => TestServer.start({ env: clusterEnv(i, 'BENCH_THREE') })));
    const kbId = await newKb(nodes[0]!);
    await Bun.sleep(500);
    report('writes, three nodes on JetStream (spread)', await load(nodes, write(kbId)));
    report('full-text search, one of three nodes', await load([nodes[0]!], search(kbId)));
    report('full-text search, spread over three nodes', await load(nodes, search(kbId)));

    // Replication lag under a write load on node 1: ack on node 1 → served by node 2.
    const lags: number[] = [];
    const deadline = performance.now() + seconds * 1000;
    let i = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < deadline) {
          const k = i++;
          const res = await nodes[0]!.api('POST', `/api/v1/knowledge-bases/${kbId}/contents`, { text: `lag probe ${k}` });
          if (res.status !== 201 || k % 10 !== 0) continue;
          const acked = performance.now();
          while ((await nodes[1]!.api('GET', `/api/v1/knowledge-bases/${kbId}/contents/${res.body.data.id}`)).status !== 200) await Bun.sleep(0);
          lags.push(performance.now() - acked);
        }
      }),
    );
    lags.sort((a, b) => a - b);
    const lagLine = `replication lag node 1 → node 2 under writes  p50 ${percentile(lags, 50).toFixed(2)} ms   p99 ${percentile(lags, 99).toFixed(2)} ms   (${lags.length} probes)`;
    rows.push(lagLine);
    console.log(lagLine);
    for (const n of nodes) {
      await n.kill9();
      n.cleanup();
    }
  } finally {
    await nats.stop();
  }
}

/** Until `probe` holds, polling every 200 ms. */
async function until(what: string, probe: () => Promise<boolean>, timeoutMs: number) {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await Bun.sleep(200)) if (await probe()) return;
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

async function join() {
  const CHUNKS_PER_ITEM = 10;
  const items = Math.ceil(joinChunks / CHUNKS_PER_ITEM);
  const tailItems = Math.max(10, Math.round(items / 100));
  const embedder = startHashEmbedder();
  const s3 = await startS3();
  const nats = await NatsCluster.start(3);
  const env = (i: number) => ({
    ...quiet,
    INGEST_WORKERS: '2',
    CLUSTER_NATS_URLS: nats.urls.join(','),
    CLUSTER_STREAM: 'BENCH_JOIN',
    CLUSTER_REPLICAS: '3',
    NODE_ID: `join-${i}`,
    COST_EFFECTIVE_MODEL: `http:${HASH_MODEL}`,
    EMBEDDING_HTTP_URL: embedder.url,
    EMBEDDING_HTTP_DIMENSIONS: String(HASH_DIMENSIONS),
    CHUNK_SIZE: '300',
    CHUNK_OVERLAP: '0',
  });
  const started: TestServer[] = [];
  const start = async (i: number, extra: Record<string, string> = {}) => {
    const node = await TestServer.start({ env: { ...env(i), ...extra } });
    started.push(node);
    return node;
  };
  try {
    const nodes = [await start(1, { ...s3.env, SNAPSHOT_ON_SHUTDOWN: 'true' }), await start(2), await start(3)];
    const kbId = await newKb(nodes[0]!);
    // Ten sentences of ~30 characters per chunk of 300: CHUNKS_PER_ITEM chunks per item.
    const text = (i: number) => Array.from({ length: CHUNKS_PER_ITEM * 8 }, (_, s) => `Log ${i}.${s}: the ferry left at ${(i + s) % 24}h.`).join(' ');
    const writeItems = async (writers: TestServer[], from: number, to: number) => {
      let next = from;
      await Promise.all(
        Array.from({ length: concurrency }, async (_, w) => {
          for (let i = next++; i < to; i = next++) {
            const res = await writers[(w + i) % writers.length]!.api('POST', `/api/v1/knowledge-bases/${kbId}/contents`, { text: text(i) });
            if (res.status !== 201) throw new Error(`write ${i}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
          }
        }),
      );
    };
    const readyCount = async (node: TestServer) => (await node.api('GET', `/api/v1/knowledge-bases/${kbId}`)).body.data.ingestion.contents.ready as number;
    let t = performance.now();
    await writeItems(nodes, 0, items);
    await until('indexed', async () => (await readyCount(nodes[0]!)) === items, 3_600_000);
    const built = (performance.now() - t) / 1000;
    let chunks = 0;
    for (let page = 1; ; page++) {
      const res = await nodes[0]!.api('GET', `/api/v1/knowledge-bases/${kbId}/contents?page=${page}&limit=100`);
      for (const item of res.body.data) chunks += item.chunkCount;
      if (res.body.data.length < 100) break;
    }
    console.log(`join: ${items} items, ${chunks} chunks written and indexed by three nodes in ${built.toFixed(1)} s`);

    // From the stream alone, while it still holds every record (node 1's snapshot below purges it).
    const streamRecords = (await nodes[1]!.api('GET', '/ready')).body.cluster.streamSeq;
    t = performance.now();
    const fromStream = await start(5);
    const joinStream = (performance.now() - t) / 1000;

    // Node 1 snapshots into the store on a graceful stop (and purges the stream below it, less the
    // margin); a tail is written after it.
    t = performance.now();
    await nodes[0]!.stop();
    const snapshotted = (performance.now() - t) / 1000;
    await writeItems(nodes.slice(1), items, items + tailItems);
    await until('tail indexed', async () => (await readyCount(nodes[1]!)) === items + tailItems, 600_000);
    const stream = await nodes[1]!.api('GET', '/ready');

    t = performance.now();
    const fromStore = await start(4, s3.env);
    const joinStore = (performance.now() - t) / 1000;
    const recovery = (await fromStore.api('GET', '/ready')).body.recovery;
    const same = async (query: string) => {
      const answers = await Promise.all(
        [nodes[1]!, fromStore, fromStream].map(async (n) =>
          JSON.stringify(
            (await n.api('POST', `/api/v1/knowledge-bases/${kbId}/search/full-text`, { query, limit: 10 })).body.data.map((h: { id: string }) => h.id),
          ),
        ),
      );
      return answers.every((a) => a === answers[0]);
    };
    const identical = (await Promise.all(['ferry 7h', 'log 42', 'left at 13h'].map(same))).every(Boolean);
    const lines = [
      `join at ${chunks} chunks (stream at record ${stream.body.cluster.streamSeq}):`,
      `  graceful stop of node 1 with its snapshot uploaded      ${snapshotted.toFixed(1)} s`,
      `  new node from the S3 snapshot + ${recovery.records} records of tail  ${joinStore.toFixed(1)} s to /ready`,
      `  new node from the stream alone (${streamRecords} records, no store)  ${joinStream.toFixed(1)} s to /ready`,
      `  the new nodes answer searches as node 2 does: ${identical ? 'yes' : 'NO'}`,
    ];
    rows.push(...lines);
    for (const line of lines) console.log(line);
  } finally {
    for (const n of started) {
      await n.kill9();
      n.cleanup();
    }
    await nats.stop();
    await s3.stop();
    embedder.stop();
  }
}

async function shards() {
  const nats = await NatsCluster.start(3);
  const env = (i: number) => ({
    ...quiet,
    CLUSTER_NATS_URLS: nats.urls.join(','),
    CLUSTER_STREAM: 'BENCH_SHARDS',
    CLUSTER_REPLICAS: '3',
    CLUSTER_SHARDS: '2',
    NODE_SHARDS: String(i),
    NODE_ID: `bench-shard-${i}`,
  });
  const nodes = await Promise.all([0, 1].map((i) => TestServer.start({ env: env(i) })));
  try {
    await until('both nodes live', async () => (await nodes[0]!.api('GET', '/ready')).body.cluster?.liveNodeCount === 2, 30_000);
    let kbId = '';
    while (!kbId) {
      const id = await newKb(nodes[0]!);
      if (shardOf(id, 2) === 1) kbId = id; // held by node 1 only
    }
    report('writes to the holder of the shard', await load([nodes[1]!], write(kbId)));
    report('writes through the other node (forwarded)', await load([nodes[0]!], write(kbId)));
    report('full-text search at the holder', await load([nodes[1]!], search(kbId)));
    report('full-text search through the other node', await load([nodes[0]!], search(kbId)));
  } finally {
    for (const n of nodes) {
      await n.kill9();
      n.cleanup();
    }
    await nats.stop();
  }
}

if (parts.has('throughput')) await throughput();
if (parts.has('shards')) await shards();
if (parts.has('join')) await join();
console.log(`\n${seconds} s per measurement, ${concurrency} concurrent clients\n${rows.join('\n')}`);
