// Where snapshots are kept besides the data directory. A store holds complete snapshots only:
// `upload` writes the manifest last, and `list` returns only snapshots whose manifest is there,
// so a reader never sees a partial upload. Checksums are verified by whoever restores.
import type { SnapshotManifest } from './format';

export interface StoredSnapshot {
  seq: number;
}

export interface SnapshotStore {
  /** For logs and metrics: "local", "s3://bucket/prefix". */
  readonly name: string;
  /** True when snapshots written under DATA_DIR/snapshots are already in this store. */
  readonly isLocal: boolean;
  /** Copy a finished local snapshot (directory `dir`) into the store, manifest last. */
  upload(dir: string, manifest: SnapshotManifest): Promise<void>;
  /** Complete snapshots in the store, newest first. */
  list(): Promise<StoredSnapshot[]>;
  /** Fetch every file of a snapshot into `destDir` (which must exist). */
  download(seq: number, destDir: string): Promise<void>;
  delete(seq: number): Promise<void>;
}
