// A new machine starts from the newest snapshot in the store (S3/MinIO), then its own empty log.
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncPath, PRIVATE_DIR } from '../engine';
import { listSnapshotDirs, snapshotDirName, verifySnapshot, type SnapshotManifest } from './format';
import type { SnapshotLogger } from './policy';
import type { SnapshotStore } from './store';

/**
 * On an empty data directory, fetch the newest intact snapshot from the store (falling back to
 * older ones when a download fails its checksums). Returns its sequence number, if any.
 */
export async function restoreFromStore(
  store: SnapshotStore,
  snapshotsDir: string,
  logger: SnapshotLogger,
  options: {
    evenOverLocal?: boolean;
    /** Whether a snapshot holds every knowledge base this node needs (cluster mode with shards). */
    covers?: (manifest: SnapshotManifest) => boolean;
  } = {},
): Promise<number | undefined> {
  const covers = options.covers ?? (() => true);
  if (store.isLocal) return undefined;
  // `evenOverLocal`: the local snapshots are too old (cluster mode: the stream was purged past them).
  for (const local of options.evenOverLocal ? [] : await listSnapshotDirs(snapshotsDir)) {
    const check = await verifySnapshot(local.dir);
    if (check.ok && covers(check.manifest)) return undefined; // a local snapshot is newer or as good
  }
  for (const { seq } of await store.list()) {
    const tmp = join(snapshotsDir, `download-${seq}-${crypto.randomUUID()}`);
    await mkdir(tmp, { recursive: true, mode: PRIVATE_DIR });
    try {
      await store.download(seq, tmp);
      const check = await verifySnapshot(tmp);
      if (!check.ok) throw new Error(check.reason);
      if (!covers(check.manifest)) {
        await rm(tmp, { recursive: true, force: true });
        logger.info({ store: store.name, seq, shards: check.manifest.shards }, 'snapshot in the store lacks shards this node holds; trying an older one');
        continue;
      }
      await rename(tmp, join(snapshotsDir, snapshotDirName(seq)));
      fsyncPath(snapshotsDir);
      logger.info({ store: store.name, seq }, 'restored snapshot from the store');
      return seq;
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      logger.warn({ store: store.name, seq, err: err instanceof Error ? err.message : String(err) }, 'snapshot in the store unusable; trying an older one');
    }
  }
  return undefined;
}
