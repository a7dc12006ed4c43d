// Snapshots, everything about them in one place: the on-disk format (format.ts), compaction
// through the engine's state machine (compactor.ts), the builder and its worker (build.ts,
// worker.ts), taking and loading them (snapshotter.ts), the policy that schedules, uploads and
// prunes them (policy.ts), the stores (local disk, S3/MinIO) and restoring from a store.
export { openEngine, newestSnapshot, Snapshotter, SnapshotRecordsDamaged, type SnapshotInfo } from './snapshotter';
export { SnapshotManager, type SnapshotLogger, type SnapshotPolicy, type SnapshotStatus } from './policy';
export { restoreFromStore } from './restore';
export { LocalSnapshotStore } from './local-store';
export { S3ClusterSnapshots, S3SnapshotStore } from './s3-store';
export type { SnapshotStore, StoredSnapshot } from './store';
export { coversShards, listSnapshotDirs, verifySnapshot, MANIFEST_FILE, RECORDS_FILE, type SnapshotManifest } from './format';
