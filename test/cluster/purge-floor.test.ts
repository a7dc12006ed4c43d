// The cluster-wide purge floor (S3ClusterSnapshots.purgeFloor): the shared stream is kept from the
// oldest of the newest snapshots each node could start from, a snapshot counting for a node only
// when it holds the node's shards. Manifests are written straight into a real S3 API (s3rver).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Client } from 'minio';
import { startS3, type TestS3 } from '../helpers/s3';
import { S3ClusterSnapshots } from '../../snapshots';

let s3: TestS3;
let client: Client;
const options = () => ({ ...s3.store, prefix: 'kb' });

beforeAll(async () => {
  s3 = await startS3();
  client = new Client({ endPoint: '127.0.0.1', port: s3.port, useSSL: false, accessKey: 'S3RVER', secretKey: 'S3RVER', region: 'us-east-1', pathStyle: true });
});
afterAll(() => s3?.stop());

async function putSnapshot(node: string, seq: number, shards?: { count: number; held: number[] }): Promise<void> {
  const manifest = {
    format: 1,
    seq,
    createdAt: new Date().toISOString(),
    files: [],
    graphs: [],
    stats: { knowledgeBases: 0, contents: 0, chunks: 0, records: 0 },
    ...(shards ? { shards } : {}),
  };
  await client.putObject(s3.bucket, `kb/nodes/${node}/snap-${String(seq).padStart(20, '0')}/manifest.json`, JSON.stringify(manifest));
}

describe('purge floor', () => {
  test('no snapshot in the store: no floor', async () => {
    expect(await new S3ClusterSnapshots(options()).purgeFloor()).toBeUndefined();
  });

  test('each node needs a snapshot holding its shards: the floor is the oldest such newest one', async () => {
    await putSnapshot('a', 80, { count: 2, held: [0] });
    await putSnapshot('a', 100, { count: 2, held: [0] });
    await putSnapshot('b', 50, { count: 2, held: [1] });
    // b's shard is held only by b's own snapshot at 50: the stream must keep what follows 50.
    expect(await new S3ClusterSnapshots(options()).purgeFloor()).toBe(50);
    // A node holding every shard snapshots at 200: it holds b's shard too.
    await putSnapshot('c', 200);
    expect(await new S3ClusterSnapshots(options()).purgeFloor()).toBe(200);
    // Every node holding everything (the default): the newest snapshot of any node.
    await putSnapshot('b', 300, { count: 2, held: [1] });
    expect(await new S3ClusterSnapshots(options()).purgeFloor()).toBe(200);
  });
});
