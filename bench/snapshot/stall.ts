// bench/snapshot.ts, part 2: a steady open-loop stream of addContent calls while a snapshot runs,
// in process: (i) the first snapshot of a log-only directory (HNSW graph from scratch), (ii) an
// incremental one (previous snapshot + log tail, graph continued; not in --quick).
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Engine, VectorIndex } from '../../engine';
import type { BaseMeta } from './base';
import { copyDir, type BenchContext } from './context';
import { afterMs, baselineMs, ORG, OUT, quick, rate, tailItems, targetChunks } from './options';
import { StallProbe, type StallResult } from './stall-probe';

export interface StallPart {
  stallFull: StallResult;
  stallIncremental?: StallResult;
  mainGraphBuildMs: number;
  pendingAfterReplay: number;
  tailGraphBuildMs: number;
  pendingAfterSnapshotOpen: number;
}

/** Build the main thread's pending HNSW vectors flat out (the server does it in the background: 5 ms of every 25 ms while serving, 20 ms while idle). */
async function catchUp(vectors: VectorIndex): Promise<number> {
  const s = performance.now();
  while (!vectors.buildStep(200, 256)) await Bun.sleep(0);
  return Math.round(performance.now() - s);
}

export async function stallPart(ctx: BenchContext, baseDir: string, snapDir: string, meta: BaseMeta): Promise<StallPart> {
  const { say, elapsed, problems, itemText, open, snapshotsOf, failedItems } = ctx;
  // Items streamed here are numbered far above the base and the tail (their text must be unique).
  let nextItem = 10_000_000;
  const nextText = () => itemText(nextItem++);
  const vectorsOf = (engine: Engine, when: string): VectorIndex => {
    const vectors = engine.knowledgeBase(meta.kbId)?.vectors;
    if (!vectors) throw new Error(`knowledge base or its vectors missing ${when}`);
    return vectors;
  };
  /** Writes streamed around one snapshot of `engine`, then the engine closed and `dir` removed. */
  const probeSnapshot = async (engine: Engine, vectors: VectorIndex, label: string, dir: string): Promise<StallResult> => {
    Bun.gc(true);
    const probe = new StallProbe(engine, snapshotsOf(engine), vectors, ORG, meta.kbId, rate, nextText);
    const result = await probe.around(label, baselineMs, afterMs);
    say(probe.describe(result));
    while (engine.stats().queueDepth > 0) await Bun.sleep(100);
    await failedItems(engine, 'the write stream');
    if (probe.errors.length > 0) problems.push(`${probe.errors.length} addContent calls failed during the stall test: ${probe.errors[0]}`);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
    return result;
  };

  // (i) The first snapshot of a data directory that has none: its graph is built from scratch.
  const stallDir = join(OUT, `stall-${targetChunks}`);
  copyDir(baseDir, stallDir);
  say(`\n2. writes at ${rate}/s during snapshots (in process)`);
  say(`  first snapshot: copy of the log-only directory at ${stallDir}`);
  let engine = await open(stallDir);
  let vectors = vectorsOf(engine, 'after replay');
  const pendingAfterReplay = vectors.graphPending;
  const mainGraphBuildMs = await catchUp(vectors);
  say(
    `  [${elapsed()}] main-thread HNSW graph of ${pendingAfterReplay} vectors built flat out in ${mainGraphBuildMs} ms (the server's background build runs at 1/5 of that pace while serving, 4/5 while idle)`,
  );
  const stallFull = await probeSnapshot(engine, vectors, 'first (full: graph from scratch)', stallDir);

  // (ii) A later snapshot: continues the previous one (its graph re-used) with the log tail after it.
  let stallIncremental: StallResult | undefined;
  let tailGraphBuildMs = 0;
  let pendingAfterSnapshotOpen = 0;
  if (!quick) {
    const incDir = join(OUT, `stall-inc-${targetChunks}`);
    copyDir(snapDir, incDir);
    rmSync(join(incDir, 'snap-meta.json'), { force: true });
    say(`  incremental snapshot: copy of the snapshot + ${tailItems}-item tail directory at ${incDir}`);
    engine = await open(incDir);
    vectors = vectorsOf(engine, 'after opening from the snapshot');
    pendingAfterSnapshotOpen = vectors.graphPending;
    tailGraphBuildMs = await catchUp(vectors);
    say(
      `  [${elapsed()}] opened from the snapshot in ${engine.recovery.millis} ms; ${pendingAfterSnapshotOpen} tail vectors added to the graph in ${tailGraphBuildMs} ms`,
    );
    stallIncremental = await probeSnapshot(engine, vectors, 'incremental (previous snapshot + tail)', incDir);
  }
  return { stallFull, stallIncremental, mainGraphBuildMs, pendingAfterReplay, tailGraphBuildMs, pendingAfterSnapshotOpen };
}
