// bench/snapshot.ts, the report: the tables of every part, what looks wrong, and the JSON result.
import { cpus, loadavg, totalmem } from 'node:os';
import { HASH_DIMENSIONS } from '../lib/hash-embed';
import { formatTable } from '../lib/table';
import type { BaseMeta } from './base';
import type { BenchContext } from './context';
import { CHUNKING, graphWaitS, parts, quick, rate, tailItems } from './options';
import type { RestartRun } from './restart';
import { perChunk, type LogBreakdown, type sizesOf } from './sizes';
import type { SnapMeta } from './snapshot-dir';
import type { StallPart } from './stall';
import type { StallResult } from './stall-probe';
import { mib, round1, round2 } from './units';

export interface Measured {
  meta: BaseMeta;
  snapMeta: SnapMeta;
  replayRuns?: RestartRun[];
  snapshotRuns?: RestartRun[];
  tailRuns?: RestartRun[];
  stall?: StallPart;
  breakdown: LogBreakdown;
  sized: ReturnType<typeof sizesOf>;
}

/** Print every table and the problems noticed; the result to write as JSON. */
export function report({ say, problems, engineLog, t0, kbConfig }: BenchContext, m: Measured) {
  const { meta, snapMeta, replayRuns, snapshotRuns, tailRuns, breakdown } = m;
  const { sizes, recordsBytes, graphBytes, snapChunks } = m.sized;
  const { stallFull, stallIncremental, mainGraphBuildMs, pendingAfterReplay, tailGraphBuildMs, pendingAfterSnapshotOpen } = m.stall ?? {
    mainGraphBuildMs: 0,
    pendingAfterReplay: 0,
    tailGraphBuildMs: 0,
    pendingAfterSnapshotOpen: 0,
  };
  const restartRows = (label: string, rs: RestartRun[] | undefined) =>
    (rs ?? []).map((r) => [
      r.run === 1 ? label : '',
      r.run,
      r.readyMs,
      r.listenMs,
      r.recovery.millis,
      r.recovery.snapshot ? r.recovery.snapshot.millis : '-',
      r.otherMs,
      r.recovery.snapshot ? r.recovery.snapshot.records : '-',
      r.recovery.records,
      r.recovery.chunks,
      r.rssMiBAtReady ?? '?',
      r.rssMiBSettled === undefined ? '' : `${r.rssMiBSettled} / ${r.hwmMiBSettled}`,
      r.graphPendingAtReady ?? '?',
      r.graphCaughtUpMs === undefined ? '' : r.graphCaughtUpMs === null ? `>${graphWaitS} (${r.graphPendingAtCap} left)` : round1(r.graphCaughtUpMs / 1000),
      r.load1,
    ]);
  const windowRows = (st: StallResult | undefined) =>
    (st?.windows ?? []).map((w) => [
      w.name === 'before' ? st!.label.split(' ')[0]! : '',
      w.name,
      `${w.fromMs}..${w.toMs}`,
      w.ackFromSchedule.n,
      w.ackFromSchedule.p50,
      w.ackFromSchedule.p99,
      w.ackFromSchedule.max,
      w.ack.max,
      w.loopMaxGapMs,
      w.loopGapsOver50ms,
      w.loopGapsOver100ms,
      w.graphStepMaxMs,
      `${w.loopGapsOver50msInGraphStep}/${w.loopGapsOver50ms}`,
    ]);
  say('\n=== results ===');
  say(`VECTORS: ${HASH_DIMENSIONS}-d f32 from a HASHING STUB over HTTP (feature hashing of words), NOT a neural model.`);
  say(
    `Knowledge base: ${meta.items} items (SciFact train abstracts, replicated, unique tag each), ${meta.chunks} chunks at ${CHUNKING.size}/${CHUNKING.overlap} chars; HNSW M=16, efAdd=128.`,
  );
  say(`Build through the engine: ${meta.ingestIndexedSeconds}s to index (acks ${meta.ingestAckSeconds}s); log ${mib(meta.walBytes)} MiB.\n`);
  if (parts.has('restart')) {
    say(`1. Restart: spawn of \`bun src/main.ts\` → first 200 of /ready, ms (target from a snapshot: < 5000 ms)`);
    say(
      formatTable(
        [
          'scenario',
          'run',
          'ready',
          'listen',
          'recovery',
          'of it snapshot',
          'other',
          'snap records',
          'log records',
          'chunks',
          'RSS MiB',
          'later RSS/peak',
          'graph pending',
          'graph s',
          'load',
        ],
        [...restartRows('a log replay', replayRuns), ...restartRows('b snapshot', snapshotRuns), ...restartRows(`c snapshot+${tailItems} tail`, tailRuns)],
      ),
    );
    say(
      `  listen: spawn → "listening" log line; recovery / of it snapshot: the engine's own numbers from /ready; other = ready − listen − recovery\n` +
        `  (worker start-up, model preload, snapshot manager); RSS at ready; later RSS/peak: first run, ≥ 10 s after ready (VmRSS / VmHWM);\n` +
        `  graph pending: vectors not yet in the HNSW graph at ready (searched exactly meanwhile); graph s: first run, spawn → graph\n` +
        `  caught up (cap ${graphWaitS}s${graphWaitS === 0 ? ', not measured' : ''}); load: 1-minute load average at spawn (2 cores).\n`,
    );
  }
  say(
    `  In process: log replay ${snapMeta.inProcessReplay.millis} ms; open from the snapshot ${snapMeta.inProcessSnapshotOpen.millis} ms (snapshot part ${snapMeta.inProcessSnapshotOpen.snapshot?.millis} ms).\n` +
      `  Snapshot taken with the engine otherwise idle (its own background graph build aside): ${snapMeta.idleSnapshotMs} ms, graph built from scratch in the\n` +
      `  snapshot worker; its SHA-256 check at start-up alone: ${snapMeta.verifyMs} ms.\n`,
  );
  if (stallFull) {
    say(`2. Writes: open loop at ${rate} addContent/s (full abstracts, indexed meanwhile) before, during and after a snapshot`);
    say(
      formatTable(
        ['snapshot', 'window', 'ms', 'acks', 'p50', 'p99', 'max', 'call→ack max', 'loop max gap', 'gaps>50', 'gaps>100', 'graph step max', 'gaps>50 in step'],
        [...windowRows(stallFull), ...windowRows(stallIncremental)],
      ),
    );
    say(
      `  ack latencies (ms) from the intended send time; call→ack from the addContent call. loop: largest gap between ticks of a\n` +
        `  1 ms setInterval. graph step: the engine's background HNSW step on the main thread (budget 5 ms; this process never reports idle); gaps>50 in step: loop gaps\n` +
        `  over 50 ms that overlap a graph step over 50 ms.\n` +
        `  first snapshot: ${stallFull.snapshotMs} ms (${stallFull.snapshot.stats.chunks} chunks), RSS ${stallFull.rssMiBBeforeSnapshot} → peak ${stallFull.peakRssMiBDuringSnapshot} → ${stallFull.rssMiBAfter} MiB, load ${stallFull.load1.before} → ${stallFull.load1.after};\n` +
        (stallIncremental
          ? `  incremental snapshot: ${stallIncremental.snapshotMs} ms (${stallIncremental.snapshot.stats.chunks} chunks), RSS ${stallIncremental.rssMiBBeforeSnapshot} → peak ${stallIncremental.peakRssMiBDuringSnapshot} → ${stallIncremental.rssMiBAfter} MiB, load ${stallIncremental.load1.before} → ${stallIncremental.load1.after}.\n`
          : `  incremental snapshot: not measured in --quick.\n`) +
        `  main-thread HNSW build after replay, flat out: ${mainGraphBuildMs} ms for ${pendingAfterReplay} vectors` +
        (stallIncremental ? `; after opening from the snapshot: ${tailGraphBuildMs} ms for the ${pendingAfterSnapshotOpen} tail vectors.\n` : '.\n'),
    );
  }
  say(`3. Size per chunk (bytes; snapshot of ${snapChunks} chunks)`);
  say(
    formatTable(
      ['what', 'bytes', 'per chunk'],
      [
        ['log before compaction', meta.walBytes, sizes.logBytesPerChunk],
        ['  content.put JSON (text)', breakdown.putJsonBytes, sizes.logBreakdownPerChunk.contentPutJson],
        ['  content.indexed JSON', breakdown.indexedJsonBytes, sizes.logBreakdownPerChunk.contentIndexedJson],
        ['  vectors (attachments)', breakdown.vectorBytes, sizes.logBreakdownPerChunk.vectors],
        ['  frame headers', breakdown.frameHeaderBytes, sizes.logBreakdownPerChunk.frameHeaders],
        ['snapshot records.log', recordsBytes, sizes.snapshot.recordsLogBytesPerChunk],
        ['snapshot HNSW graph', graphBytes, sizes.snapshot.graphBytesPerChunk],
        ['snapshot total', recordsBytes + graphBytes, sizes.snapshot.totalBytesPerChunk],
      ],
    ),
  );

  // Anything that looks wrong.
  if (snapshotRuns && replayRuns) {
    const snapReady = snapshotRuns.map((r) => r.readyMs);
    if (Math.max(...snapReady) >= 5000) problems.push(`restart from a snapshot took up to ${Math.max(...snapReady)} ms to /ready (target < 5000 ms)`);
    const replayReady = Math.min(...replayRuns.map((r) => r.readyMs));
    if (Math.min(...snapReady) > replayReady)
      problems.push(`restart from a snapshot (${Math.min(...snapReady)} ms best) is slower to /ready than log replay (${replayReady} ms best)`);
    const first = snapshotRuns[0]!;
    if (first.hwmMiBSettled !== undefined && first.rssMiBSettled !== undefined && first.hwmMiBSettled > 1.4 * first.rssMiBSettled) {
      problems.push(
        `restart from a snapshot peaks at ${first.hwmMiBSettled} MiB RSS for a steady ${first.rssMiBSettled} MiB (start-up transient; log replay peaked at ${replayRuns[0]!.hwmMiBSettled} MiB)`,
      );
    }
  }
  if (recordsBytes >= 0.95 * meta.walBytes)
    problems.push(
      `the snapshot's records.log is ${perChunk(recordsBytes, snapChunks)} B/chunk vs ${sizes.logBytesPerChunk} B/chunk in the log: compaction saves nothing for insert-only data, and loading it is the same replay`,
    );
  for (const st of [stallFull, stallIncremental]) {
    if (!st) continue;
    const [before, during] = st.windows;
    if (during!.loopMaxGapMs > Math.max(50, 2 * before!.loopMaxGapMs))
      problems.push(`event loop stalled ${during!.loopMaxGapMs} ms during the ${st.label} snapshot (before it: ${before!.loopMaxGapMs} ms)`);
    if (during!.ackFromSchedule.max > Math.max(100, 2 * before!.ackFromSchedule.max))
      problems.push(`write acks reached ${during!.ackFromSchedule.max} ms during the ${st.label} snapshot (before it: ${before!.ackFromSchedule.max} ms)`);
    if (before!.graphStepMaxMs > 50 || during!.graphStepMaxMs > 50)
      problems.push(
        `background HNSW steps on the main thread ran up to ${Math.max(before!.graphStepMaxMs, during!.graphStepMaxMs)} ms (budget 5 ms) around the ${st.label} snapshot`,
      );
  }
  for (const e of engineLog) problems.push(`engine ${e.level}: ${e.message} ${e.details ? JSON.stringify(e.details).slice(0, 300) : ''}`);
  for (const r of [...(replayRuns ?? []), ...(snapshotRuns ?? []), ...(tailRuns ?? [])]) for (const w of r.serverWarnings) problems.push(`server: ${w}`);
  say(problems.length ? `\nLooks wrong:\n${problems.map((p) => `  - ${p}`).join('\n')}` : '\nNothing looked wrong.');

  const result = {
    bench: 'snapshot',
    mode: quick ? 'quick' : 'full',
    parts: [...parts],
    date: new Date().toISOString(),
    machine: { cores: cpus().length, memMiB: mib(totalmem()), bun: Bun.version, loadAtEnd: loadavg().map(round2) },
    vectors: `${HASH_DIMENSIONS}-d f32 from a hashing stub (feature hashing of words + per-text noise) served over HTTP; NOT a neural model`,
    corpus: 'scifact-train abstracts, replicated with a unique tag per item',
    chunking: CHUNKING,
    hnsw: kbConfig.hnsw,
    base: meta,
    restart: {
      note: 'ms from spawning `bun src/main.ts` to the first 200 of /ready; recovery = engine.recovery as /ready reports it',
      logReplay: replayRuns,
      snapshot: snapshotRuns,
      snapshotPlusTail: tailRuns,
      graphWaitS,
    },
    snapshotPrep: snapMeta,
    stall: stallFull
      ? {
          rate,
          mainThreadGraphBuildMs: mainGraphBuildMs,
          mainThreadGraphVectors: pendingAfterReplay,
          tailGraphBuildMs,
          tailGraphVectors: pendingAfterSnapshotOpen,
          first: stallFull,
          incremental: stallIncremental,
        }
      : undefined,
    sizes,
    problems,
    engineLog,
    totalSeconds: Math.round((performance.now() - t0) / 1000),
  };
  return result;
}
