// Snapshots at scale: a knowledge base of ~100k chunks WITH vectors.
//   1. restart   time from spawning the real server (`bun src/main.ts`) to the first 200 of /ready,
//                plus the engine's own `recovery` report: (a) by log replay only, (b) from a
//                snapshot (log truncated), (c) from a snapshot plus a log tail; each run N times;
//   2. stall     in process: a steady open-loop stream of addContent calls while a snapshot
//                runs: (i) the first snapshot of a log-only directory (HNSW graph from scratch),
//                (ii) an incremental one (previous snapshot + log tail, graph continued);
//                acknowledgement latency before / during / after, the main thread's event-loop
//                stall (largest gap between the ticks of a 1 ms interval), and the engine's
//                background HNSW steps on the main thread, timed;
//   3. size      snapshot bytes per chunk (records.log, HNSW graph) versus the log before compaction.
//
//   bun bench/snapshot.ts [--quick] [--json out.json] [--chunks 100000] [--runs 3] [--tail 5000]
//                         [--rate 200] [--fresh] [--graph-wait 180] [--parts restart,stall]
//   --parts stall reuses the snapshot directory of an earlier run (snap-<chunks>/, made if missing).
//   --quick: 8k chunks, a 400-item tail, no incremental stall phase (about a minute once built).
// The machine has 2 cores: other processes running meanwhile skew every number here, so the
// 1-minute load average is recorded with each measurement.
//
// VECTORS COME FROM A HASHING STUB, NOT A NEURAL MODEL: a tiny OpenAI-compatible embeddings server
// (bench/snapshot/stub.ts, run by this script as a child process so its CPU and memory stay out of
// the measured process) returns deterministic 384-d vectors: bench/lib/hash-embed.ts feature
// hashing of the words of each input, plus a little noise seeded by the whole text (so replicated
// abstracts do not collapse onto near-identical vectors), L2-normalized. Embedding 100k chunks with
// USE-Lite would take hours on 2 cores; what is measured here (log, snapshot and graph sizes and
// times) depends on the dimensions and the count of vectors, not on where the numbers came from.
//
// Items are SciFact train abstracts (read from ../shared/eval, never copied here), replicated with
// a unique tag per item, chunked at 1000/100 characters (~2.15 chunks per abstract). The log-only
// data directory is built once through the engine under .bench-out/snapshot/base-<chunks>/ and
// reused (--fresh rebuilds it); every phase that changes a data directory works on a copy.
import { mkdirSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { HASH_DIMENSIONS } from './lib/hash-embed';
import { baseDirectory } from './snapshot/base';
import { createContext } from './snapshot/context';
import { args, OUT, parts, quick, targetChunks } from './snapshot/options';
import { report } from './snapshot/report';
import { restarts, type RestartRun } from './snapshot/restart';
import { logBreakdown, sizesOf } from './snapshot/sizes';
import { snapshotDirectory } from './snapshot/snapshot-dir';
import { stallPart, type StallPart } from './snapshot/stall';
import { runStub, spawnStub } from './snapshot/stub';
import { mib, round2 } from './snapshot/units';

async function main(): Promise<void> {
  const t0 = performance.now();
  mkdirSync(OUT, { recursive: true });
  const stub = await spawnStub();
  try {
    const ctx = await createContext(stub.url, t0);
    const { say, elapsed } = ctx;
    say(
      `snapshot bench (${quick ? 'quick' : 'full'}): target ${targetChunks} chunks, ${cpus().length} cores, ${mib(totalmem())} MiB RAM, bun ${Bun.version}, load average ${loadavg().map(round2).join(' ')}`,
    );
    say(`VECTORS: ${HASH_DIMENSIONS}-d from a HASHING STUB (feature hashing of words), NOT a neural model; embeddings server at ${stub.url}`);

    const { baseDir, meta } = await baseDirectory(ctx);

    // 1a: log replay only.
    let replayRuns: RestartRun[] | undefined;
    if (parts.has('restart')) {
      say(`\n1a. restart by log replay only (${mib(meta.walBytes)} MiB of log)`);
      replayRuns = await restarts(ctx, 'log replay', baseDir);
    }
    // 1b / 1c: a snapshot (log truncated), then a log tail after it.
    const { snapDir, snapMeta, snapshotRuns, tailRuns } = await snapshotDirectory(ctx, baseDir, meta);
    // 2: writes while snapshots are taken.
    let stall: StallPart | undefined;
    if (parts.has('stall')) stall = await stallPart(ctx, baseDir, snapDir, meta);
    // 3: sizes.
    const breakdown = await logBreakdown(baseDir);
    const sized = sizesOf(meta, snapMeta, breakdown);

    const result = report(ctx, { meta, snapMeta, replayRuns, snapshotRuns, tailRuns, stall, breakdown, sized });
    if (args.json) {
      await Bun.write(resolve(args.json), JSON.stringify(result, null, 2));
      say(`\nwrote ${resolve(args.json)}`);
    }
    say(`total ${elapsed()}`);
  } finally {
    await stub.stop();
  }
}

if (args.stub) runStub();
else await main();
