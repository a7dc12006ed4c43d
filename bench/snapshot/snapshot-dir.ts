// bench/snapshot.ts, parts 1b and 1c: a copy of the base directory gets a snapshot (log truncated
// after it), then a log tail; the restarts are timed on each. The directory is kept (with
// snap-meta.json) so `--parts stall` can start from it later.
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { RecoveryReport } from '../../engine';
import { verifySnapshot, type SnapshotInfo } from '../../snapshots';
import type { BaseMeta } from './base';
import { copyDir, type BenchContext } from './context';
import { args, OUT, parts, tailItems, targetChunks } from './options';
import { restarts, type RestartRun } from './restart';
import { mib, round2 } from './units';

export interface SnapMeta {
  tailItems: number;
  idleSnapshotMs: number;
  verifyMs: number;
  seq: number;
  manifest: SnapshotInfo['manifest'];
  logSegmentsRemoved: number;
  logBytesAfterTruncate: number;
  inProcessReplay: RecoveryReport;
  inProcessSnapshotOpen: RecoveryReport;
  tailChunks: number;
  tailLogBytes: number;
  tailIndexSeconds: number;
}

export async function snapshotDirectory(ctx: BenchContext, baseDir: string, meta: BaseMeta) {
  const { say, elapsed, problems, open, snapshotsOf, ingest, failedItems } = ctx;
  const snapDir = join(OUT, `snap-${targetChunks}`);
  const snapMetaPath = join(snapDir, 'snap-meta.json');
  let snapMeta: SnapMeta | undefined;
  let snapshotRuns: RestartRun[] | undefined;
  let tailRuns: RestartRun[] | undefined;
  const reuseSnap = !parts.has('restart') && existsSync(snapMetaPath) && !args.fresh;
  if (reuseSnap) {
    snapMeta = (await Bun.file(snapMetaPath).json()) as SnapMeta;
    if (snapMeta.tailItems !== tailItems) snapMeta = undefined;
  }
  if (snapMeta) {
    say(`\nreusing ${snapDir} (snapshot seq ${snapMeta.seq} + ${snapMeta.tailItems}-item tail)`);
  } else {
    copyDir(baseDir, snapDir);
    say(`\n1b. ${parts.has('restart') ? 'restart from' : 'preparing'} a snapshot (copy at ${snapDir})`);
    let engine = await open(snapDir);
    const inProcessReplay = engine.recovery;
    let s = performance.now();
    const idleSnap = await snapshotsOf(engine).snapshot();
    const idleSnapshotMs = Math.round(performance.now() - s);
    const logSegmentsRemoved = await engine.truncateLog(idleSnap.seq);
    const logBytesAfterTruncate = await engine.logBytes();
    await engine.close();
    // Start-up checks every file of the snapshot (SHA-256) before loading it: that part alone.
    s = performance.now();
    const verified = await verifySnapshot(idleSnap.dir);
    const verifyMs = Math.round(performance.now() - s);
    if (!verified.ok) problems.push(`the snapshot just written fails its own check: ${verified.reason}`);
    say(
      `  [${elapsed()}] in-process log replay ${inProcessReplay.millis} ms; snapshot (seq ${idleSnap.seq}, engine otherwise idle) took ${idleSnapshotMs} ms: ` +
        `${idleSnap.manifest.stats.chunks} chunks, ${idleSnap.manifest.stats.records} records; ${logSegmentsRemoved} log segments removed, ${mib(logBytesAfterTruncate)} MiB of log left; ` +
        `verifying its checksums alone takes ${verifyMs} ms; load ${round2(loadavg()[0]!)}`,
    );
    if (parts.has('restart')) snapshotRuns = await restarts(ctx, 'snapshot', snapDir);

    if (parts.has('restart')) say(`\n1c. restart from a snapshot plus a log tail of ${tailItems} items`);
    engine = await open(snapDir);
    const inProcessSnapshotOpen = engine.recovery;
    const chunksBeforeTail = engine.stats().chunks;
    const tailTimes = await ingest(engine, meta.kbId, meta.items, tailItems);
    await failedItems(engine, 'adding the tail');
    const tailChunks = engine.stats().chunks - chunksBeforeTail;
    const tailLogBytes = await engine.logBytes();
    await engine.close();
    say(
      `  [${elapsed()}] in-process open from the snapshot ${inProcessSnapshotOpen.millis} ms; tail: ${tailItems} items, ${tailChunks} chunks in ${tailTimes.indexedSeconds}s, log ${mib(tailLogBytes)} MiB`,
    );
    if (parts.has('restart')) tailRuns = await restarts(ctx, 'snapshot+tail', snapDir);
    snapMeta = {
      tailItems,
      idleSnapshotMs,
      verifyMs,
      seq: idleSnap.seq,
      manifest: idleSnap.manifest,
      logSegmentsRemoved,
      logBytesAfterTruncate,
      inProcessReplay,
      inProcessSnapshotOpen,
      tailChunks,
      tailLogBytes,
      tailIndexSeconds: tailTimes.indexedSeconds,
    };
    await Bun.write(snapMetaPath, JSON.stringify(snapMeta, null, 2));
  }
  return { snapDir, snapMeta, snapshotRuns, tailRuns };
}
