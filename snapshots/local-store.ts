// The embedded default: snapshots stay in DATA_DIR/snapshots, where the engine writes them.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { listSnapshotDirs, snapshotDirName } from './format';
import type { SnapshotStore, StoredSnapshot } from './store';

export class LocalSnapshotStore implements SnapshotStore {
  readonly name = 'local';
  readonly isLocal = true;

  constructor(private readonly root: string) {}

  async upload(): Promise<void> {
    // The snapshot is already here: the engine wrote it under this directory.
  }

  async list(): Promise<StoredSnapshot[]> {
    const dirs = await listSnapshotDirs(this.root);
    const out: StoredSnapshot[] = [];
    for (const d of dirs) if (await Bun.file(join(d.dir, 'manifest.json')).exists()) out.push({ seq: d.seq });
    return out;
  }

  async download(): Promise<void> {
    throw new Error('the local store is the data directory itself; nothing to download');
  }

  async delete(seq: number): Promise<void> {
    await rm(join(this.root, snapshotDirName(seq)), { recursive: true, force: true });
  }
}
