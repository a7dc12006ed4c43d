// Builds a data directory of ~N chunks through the engine (vectors from the hashing stub), waits
// until the HNSW graph holds every vector, then takes one snapshot of it (log truncated), for
// bench/restart/*.ts:
//   bun bench/restart/build-base.ts [--chunks 100000] [--out .bench-out/restart/base-100000]
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openEngine } from '../../snapshots';
import { textKbConfig } from '../../support/kb-config';
import { chunkText } from '../lib/engine-internals';
import { loadCorpus, replicaText } from '../lib/corpus';
import { HASH_DIMENSIONS, HASH_MODEL } from '../lib/hash-embed';
import { graphComplete } from '../lib/graph';
import { BENCH_OUT } from '../lib/paths';
import { spawnStub } from '../snapshot/stub';

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { chunks: { type: 'string', default: '100000' }, out: { type: 'string' } } });
const target = Number(values.chunks);
const out = values.out ?? join(BENCH_OUT, 'restart', `base-${target}`);
if (existsSync(join(out, 'bench-meta.json'))) {
  console.log(`${out} exists`);
  process.exit(0);
}
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
// As bench/scale.ts chunks for an HTTP model.
const CHUNKING = { size: 2000, overlap: 200 };
const ORG = 'org_bench';
const { data } = await loadCorpus();
const itemText = (i: number) => replicaText(data.corpus, i).text;
let items = 0;
let expected = 0;
while (expected < target) expected += chunkText(itemText(items++), CHUNKING).length;
const stub = await spawnStub();
const t0 = performance.now();
const { engine, snapshots } = await openEngine({
  dataDir: out,
  compute: { documentWorkers: 2, settings: { http: { url: stub.url } } },
  log: (level, message, details) => level !== 'info' && console.warn(message, details ?? ''),
});
const kb = await engine.createKnowledgeBase(ORG, {
  name: 'restart bench',
  description: '',
  type: 'TEXT_HIGH_QUALITY',
  config: textKbConfig({ provider: 'http', model: HASH_MODEL, dimensions: HASH_DIMENSIONS, metric: 'cosine', quantization: 'f32' }, { chunking: CHUNKING }),
});
console.log(`${items} items (~${expected} chunks)`);
for (let i = 0; i < items; i += 500) {
  await Promise.all(Array.from({ length: Math.min(500, items - i) }, (_, j) => engine.addContent(ORG, kb.id, { text: itemText(i + j) })));
  if (i % 10000 === 0) console.log(`${((performance.now() - t0) / 1000).toFixed(0)}s: ${i} items added, ${engine.stats().chunks} chunks`);
}
while (engine.stats().queueDepth > 0) await Bun.sleep(200);
console.log(`${((performance.now() - t0) / 1000).toFixed(0)}s indexed: ${engine.stats().chunks} chunks`);
// The graph worker falls far behind a load this fast (at 1M it held 233k vectors when indexing
// ended): a snapshot then would leave every start on it building the rest, and restarts measured
// on it would time that, not a restart.
await graphComplete(engine, (pending) => console.log(`${((performance.now() - t0) / 1000).toFixed(0)}s: ${pending} vectors not in the graph yet`));
const snap = await snapshots.snapshot({ reuseGraphs: true });
await engine.truncateLog(snap.seq);
console.log(`${((performance.now() - t0) / 1000).toFixed(0)}s snapshot ${snap.seq}`, snap.manifest.stats, snap.manifest.graphs);
await engine.close();
await stub.stop();
await Bun.write(join(out, 'bench-meta.json'), JSON.stringify({ kbId: kb.id, items, chunks: snap.manifest.stats.chunks }));
