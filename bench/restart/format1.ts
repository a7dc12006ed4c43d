// Rewrites the newest snapshot of a data directory as snapshot format 1 wrote it (all records JSON),
// to measure the code before format 2 on the same data, and the upgrade path:
//   bun bench/restart/format1.ts <dataDir>
import { join } from 'node:path';
import { listSnapshotDirs } from '../../snapshots';
import { rewriteAsFormat1 } from '../../support/snapshot-format1';

const dataDir = Bun.argv[2];
if (!dataDir) throw new Error('usage: bun bench/restart/format1.ts <dataDir>');
const [newest] = await listSnapshotDirs(join(dataDir, 'snapshots'));
if (!newest) throw new Error(`no snapshot under ${dataDir}`);
await rewriteAsFormat1(newest.dir);
console.log(`${newest.dir}: format 1`);
