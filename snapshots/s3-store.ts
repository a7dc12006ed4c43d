// Snapshots in MinIO, AWS S3 or any S3 API, through the `minio` client. Layout:
//   <prefix>/snap-<seq>/<file>   every file of the snapshot, then manifest.json last
// Objects up to `partSize` go up in one PUT (read into memory first); larger ones as multipart.
import { Client } from 'minio';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { ShardSet } from '../engine';
import { MANIFEST_FILE, snapshotDirName, type SnapshotManifest } from './format';
import type { SnapshotStore, StoredSnapshot } from './store';

export interface S3StoreOptions {
  endpoint: string;
  port?: number;
  useSSL: boolean;
  accessKey: string;
  secretKey: string;
  region?: string;
  bucket: string;
  prefix?: string;
  /** Multipart threshold and part size in bytes (minio's default is 64 MiB). */
  partSize?: number;
  pathStyle?: boolean;
}

const SNAP = /snap-(\d{20})\/manifest\.json$/;

/** A key prefix without leading or trailing slashes ('' for none). */
const trimSlashes = (prefix: string | undefined) => (prefix ?? '').replace(/^\/+|\/+$/g, '');

export class S3SnapshotStore implements SnapshotStore {
  readonly isLocal = false;
  readonly name: string;
  private readonly client: Client;
  private readonly prefix: string;

  constructor(private readonly options: S3StoreOptions) {
    this.client = new Client({
      endPoint: options.endpoint,
      port: options.port,
      useSSL: options.useSSL,
      accessKey: options.accessKey,
      secretKey: options.secretKey,
      region: options.region,
      partSize: options.partSize,
      pathStyle: options.pathStyle ?? true,
    });
    this.prefix = trimSlashes(options.prefix);
    this.name = `s3://${options.bucket}${this.prefix ? `/${this.prefix}` : ''}`;
  }

  private key(seq: number, file: string): string {
    return [this.prefix, snapshotDirName(seq), file].filter(Boolean).join('/');
  }

  /** Create the bucket when it does not exist (fine on MinIO; on AWS, pre-create it). */
  async ensureBucket(): Promise<void> {
    if (!(await this.client.bucketExists(this.options.bucket))) await this.client.makeBucket(this.options.bucket, this.options.region ?? '');
  }

  async upload(dir: string, manifest: SnapshotManifest): Promise<void> {
    for (const f of manifest.files) {
      // The manifest's length of each file, not the file's: a vector file is the engine's own,
      // linked, and may grow past the snapshot's rows while it uploads.
      const body = f.bytes > 0 ? createReadStream(join(dir, f.name), { start: 0, end: f.bytes - 1 }) : Buffer.alloc(0);
      await this.client.putObject(
        this.options.bucket,
        this.key(manifest.seq, f.name),
        body,
        f.bytes,
        f.sha256 ? { 'x-amz-meta-sha256': f.sha256 } : { 'x-amz-meta-crc32': String(f.crc32) },
      );
    }
    // Last: a snapshot is listed only once its manifest exists.
    await this.client.fPutObject(this.options.bucket, this.key(manifest.seq, MANIFEST_FILE), join(dir, MANIFEST_FILE));
  }

  /** Names of every object under the prefix (and `under` below it). */
  async objectNames(under = ''): Promise<string[]> {
    const names: string[] = [];
    const stream = this.client.listObjectsV2(this.options.bucket, `${this.prefix ? `${this.prefix}/` : ''}${under}`, true);
    for await (const obj of stream as AsyncIterable<{ name?: string }>) if (obj.name) names.push(obj.name);
    return names;
  }

  async list(): Promise<StoredSnapshot[]> {
    const seqs: number[] = [];
    for (const name of await this.objectNames()) {
      const m = SNAP.exec(name);
      // Only this store's own snapshots (not those of cluster nodes below the same prefix).
      if (m && name === this.key(Number(m[1]), MANIFEST_FILE)) seqs.push(Number(m[1]));
    }
    return seqs.sort((a, b) => b - a).map((seq) => ({ seq }));
  }

  /** A stored snapshot's manifest. */
  async manifest(seq: number): Promise<SnapshotManifest> {
    const stream = await this.client.getObject(this.options.bucket, this.key(seq, MANIFEST_FILE));
    return JSON.parse(await new Response(stream as unknown as ReadableStream).text()) as SnapshotManifest;
  }

  async download(seq: number, destDir: string): Promise<void> {
    const manifestPath = join(destDir, MANIFEST_FILE);
    await this.client.fGetObject(this.options.bucket, this.key(seq, MANIFEST_FILE), manifestPath);
    const manifest = JSON.parse(await Bun.file(manifestPath).text()) as SnapshotManifest;
    for (const f of manifest.files) await this.client.fGetObject(this.options.bucket, this.key(seq, f.name), join(destDir, f.name));
  }

  async delete(seq: number): Promise<void> {
    // Manifest first, so a half-deleted snapshot is never listed as complete.
    await this.client.removeObject(this.options.bucket, this.key(seq, MANIFEST_FILE));
    const names: string[] = [];
    const stream = this.client.listObjectsV2(this.options.bucket, this.key(seq, ''), true);
    for await (const obj of stream as AsyncIterable<{ name?: string }>) if (obj.name) names.push(obj.name);
    if (names.length > 0) await this.client.removeObjects(this.options.bucket, names);
  }
}

const NODE_SNAP = /(?:^|\/)nodes\/([^/]+)\/snap-(\d{20})\/manifest\.json$/;

/**
 * Cluster mode: every node keeps its snapshots under `<prefix>/nodes/<node id>/` (each is a
 * complete, self-consistent state at a stream sequence number), and a new or replaced node starts
 * from the newest of any node's. Read-only: a node writes only its own (an S3SnapshotStore).
 */
export class S3ClusterSnapshots implements SnapshotStore {
  readonly isLocal = false;
  readonly name: string;
  private readonly nodes: Map<number, S3SnapshotStore> = new Map();

  constructor(private readonly options: S3StoreOptions) {
    const prefix = trimSlashes(options.prefix);
    this.name = `s3://${options.bucket}/${prefix ? `${prefix}/` : ''}nodes/*`;
  }

  /** A node's own store in the cluster layout. */
  static ofNode(options: S3StoreOptions, nodeId: string): S3SnapshotStore {
    return new S3SnapshotStore({ ...options, prefix: [trimSlashes(options.prefix), 'nodes', nodeId].filter(Boolean).join('/') });
  }

  /** Every node's complete snapshots (those with a manifest). */
  private async stored(): Promise<{ node: string; seq: number }[]> {
    const out: { node: string; seq: number }[] = [];
    for (const name of await new S3SnapshotStore(this.options).objectNames('nodes/')) {
      const m = NODE_SNAP.exec(name);
      if (m) out.push({ node: m[1]!, seq: Number(m[2]) });
    }
    return out;
  }

  async list(): Promise<StoredSnapshot[]> {
    this.nodes.clear();
    for (const { node, seq } of await this.stored()) if (!this.nodes.has(seq)) this.nodes.set(seq, S3ClusterSnapshots.ofNode(this.options, node));
    return [...this.nodes.keys()].sort((a, b) => b - a).map((seq) => ({ seq }));
  }

  async download(seq: number, destDir: string): Promise<void> {
    if (!this.nodes.has(seq)) await this.list();
    const store = this.nodes.get(seq);
    if (!store) throw new Error(`no snapshot ${seq} in ${this.name}`);
    await store.download(seq, destDir);
  }

  /**
   * The lowest stream position the shared log must keep for every node to start again: each node
   * with snapshots in the store needs one (its own or another's) holding at least its shards; the
   * floor is the oldest of the newest such snapshot per node. Undefined while no node has one.
   */
  async purgeFloor(): Promise<number | undefined> {
    const stored = await this.stored();
    const shards = await Promise.all(
      stored.map((s) =>
        S3ClusterSnapshots.ofNode(this.options, s.node)
          .manifest(s.seq)
          .then((m) => m.shards),
      ),
    );
    const snapshots = stored.map((s, i) => ({ ...s, shards: shards[i] }));
    const newestOf = new Map<string, (typeof snapshots)[number]>();
    for (const s of snapshots) if ((newestOf.get(s.node)?.seq ?? -1) < s.seq) newestOf.set(s.node, s);
    let floor: number | undefined;
    for (const own of newestOf.values()) {
      const needs = own.shards ? new ShardSet(own.shards.count, own.shards.held) : undefined;
      const covering = snapshots.filter((s) => !needs || needs.coveredBy(s.shards)).reduce((max, s) => Math.max(max, s.seq), own.seq);
      floor = Math.min(floor ?? covering, covering);
    }
    return floor;
  }

  async upload(): Promise<void> {
    throw new Error('a node uploads only to its own store (S3ClusterSnapshots.ofNode)');
  }

  async delete(): Promise<void> {
    throw new Error('a node deletes only from its own store (S3ClusterSnapshots.ofNode)');
  }
}
