// Where the seconds of the snapshot at graceful shutdown go, on a copy of a data directory holding
// a snapshot (bench/restart/build-base.ts): the engine opens, `--tail` items are added (vectors
// from the hashing stub) and indexed, the in-memory graph completes, then the shutdown snapshot is
// taken as Snapshotter.take() takes it but built in this process, timed by phase (buildSnapshot's
// `phases`), then the engine closes.
// The snapshot is then kept and the engine opened on it again (restart after that shutdown).
//   bun bench/restart/shutdown.ts [--dir .bench-out/restart/base-100000] [--tail 2000] [--full]
// `--full`: the snapshot written whole, as before incremental snapshots (the code after them).
// `--no-delta`: index dumps written whole, as before index deltas (engine/kb/index-delta.ts).
// The dumps are taken (and vector files linked) on the main thread as the Snapshotter takes them
// ('dumps taken (main thread)'), written off it ('dumps written'), made durable (vector files
// checksummed) by the build ('index dumps').
import { cpSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildSnapshot } from '../../snapshots/build';
import { openEngine } from '../../snapshots';
import { itemMarks, writeDumps } from '../../snapshots/snapshotter';
import { snapshotDirName } from '../../snapshots/format';
import { loadCorpus, replicaText } from '../lib/corpus';
import { graphComplete } from '../lib/graph';
import { BENCH_OUT } from '../lib/paths';
import { spawnStub } from '../snapshot/stub';

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    dir: { type: 'string' },
    tail: { type: 'string', default: '2000' },
    full: { type: 'boolean', default: false },
    'no-delta': { type: 'boolean', default: false },
  },
});
const base = values.dir ?? join(BENCH_OUT, 'restart', 'base-100000');
const work = `${base}-shutdown`;
rmSync(work, { recursive: true, force: true });
cpSync(base, work, { recursive: true });
const meta = (await Bun.file(join(base, 'bench-meta.json')).json()) as { kbId: string; items: number };
const stub = await spawnStub();
const { engine, snapshots } = await openEngine({
  dataDir: work,
  compute: { documentWorkers: 2, settings: { http: { url: stub.url } } },
  log: (level, message, details) => level !== 'info' && console.warn(message, details ?? ''),
});
const { data } = await loadCorpus();
const tail = Number(values.tail);
for (let i = 0; i < tail; i += 500) {
  await Promise.all(
    Array.from({ length: Math.min(500, tail - i) }, (_, j) =>
      engine.addContent('org_bench', meta.kbId, { text: replicaText(data.corpus, meta.items + i + j).text }),
    ),
  );
}
while (engine.stats().queueDepth > 0) await Bun.sleep(100);
// As in bench/scale.ts, the graph is complete before the stop.
const kb = engine.getKnowledgeBase('org_bench', meta.kbId);
// Not capped: a 300 s cap let the snapshot take an unfinished graph at 1M (766k vectors were pending).
await graphComplete(engine);
const phases: Record<string, number> = {};
let t = performance.now();
const seq = await engine.sealLog();
phases['seal log'] = Math.round(performance.now() - t);
const prev = snapshots.latest!;
const tmp = join(snapshots.dir, `tmp-bench-${seq}`);
mkdirSync(tmp);
t = performance.now();
const mainGraphs = engine.saveGraphs((kbId) => join(tmp, `main-graph-${kbId}.usearch`));
phases['save graphs (main thread)'] = Math.round(performance.now() - t);
// The index and item dumps, as Snapshotter.take() writes them: taken on the main thread, written after.
t = performance.now();
const bases = values['no-delta'] ? undefined : snapshots.dumpBases;
const written = writeDumps(tmp, engine.dumpIndexes(), engine.dumpItems(itemMarks(prev, bases)), prev, bases);
phases['dumps taken (main thread)'] = Math.round(performance.now() - t);
t = performance.now();
const { indexes, items } = await written;
phases['dumps written'] = Math.round(performance.now() - t);
t = performance.now();
const manifest = await buildSnapshot(
  {
    prevDir: prev.dir,
    log: engine.logRange(prev.seq, seq),
    seq,
    outDir: tmp,
    graphThreshold: engine.graphThreshold,
    mainGraphs,
    indexes,
    ...(items ? { items } : {}),
    shards: engine.shards.toJSON(),
    // As Snapshotter.take() at shutdown (code that knows incremental snapshots).
    ...(!values.full && prev.manifest.format >= 2 ? { incremental: { stats: engine.stats() } } : {}),
  },
  phases,
);
const buildMs = Math.round(performance.now() - t);
t = performance.now();
await engine.close();
const closeMs = Math.round(performance.now() - t);
await stub.stop();
renameSync(tmp, join(snapshots.dir, snapshotDirName(seq)));
t = performance.now();
const reopened = await openEngine({ dataDir: work, log: () => {}, holdIngestion: true });
const restartMs = Math.round(performance.now() - t);
const restart = {
  ms: restartMs,
  recovery: reopened.engine.recovery,
  graphPending: Object.values((await reopened.engine.metrics()).byType).map((x) => x.graphPending),
};
await reopened.engine.close();
console.log(
  JSON.stringify(
    { kb: kb.id, tailItems: tail, seq, records: manifest.stats, files: manifest.files, graphs: manifest.graphs, phases, buildMs, closeMs, restart },
    null,
    2,
  ),
);
// The work copy is kept for a look (bench/restart/split.ts --real --dir it).
