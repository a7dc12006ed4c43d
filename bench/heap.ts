// Where the JavaScript heap of a knowledge base goes per chunk (issue 25): a data directory is
// filled through the engine library (full-text only: vectors are measured elsewhere), then a fresh
// process opens it, searches once (the first search settles every item's statistics) and takes
// the parts away one at a time, reading the heap after a full collection each time: what each
// step frees is what that part holds.
//
//   bun bench/heap.ts [--chunks 50000] [--dir /tmp/kb-heap-50k]   fill (once) and measure
//   --dir keeps the filled directory for later runs (filled only when empty).
//
// Measured 2026-11-26 at 100,395 chunks (87,000 items, SciFact replicated, 2,000/200 chunks), JS
// heap bytes per chunk, on the branch point of `heap` → after it:
//   item text 1,627 → 0 (in the text store file: 1,573 B/chunk on disk)
//   BM25 posting lists 870 → 574; per-document term ids 483 → 133
//   items 344 → 330; metadata index 129 → 19; chunk ids and slots 124 → 46; live chunk lists 117 → 89
//   BM25 groups 59, term dictionary 43, per-document arrays 22, rest ~50 (unchanged)
//   total 3,873 → 1,378; RSS growth 3 s after open 5,659 → 2,530 (full-text only, no vectors)
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { heapStats } from 'bun:jsc';
import { analyze, Engine, searchFullText } from '../engine';
import { NO_EMBEDDING, textKbConfig } from '../support/kb-config';
import { loadCorpus, replicaText } from './lib/corpus';
import { rssOf } from './lib/memory';

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: { chunks: { type: 'string', default: '50000' }, dir: { type: 'string' }, measure: { type: 'boolean', default: false } },
});
const target = Number(values.chunks);
const dataDir = values.dir ?? `/tmp/kb-heap-${target}`;
const ORG = 'org_heap';

async function heap(): Promise<{ heap: number; extra: number; objects: number; types: Record<string, number> }> {
  await Bun.sleep(0);
  Bun.gc(true);
  await Bun.sleep(0);
  Bun.gc(true);
  const s = heapStats();
  return { heap: s.heapSize, extra: s.extraMemorySize, objects: s.objectCount, types: s.objectTypeCounts };
}

async function fill(): Promise<void> {
  mkdirSync(dataDir, { recursive: true });
  const { data } = await loadCorpus();
  const engine = await Engine.open({ dataDir, compute: { documentWorkers: 2 }, log: () => {} });
  const kb = await engine.createKnowledgeBase(ORG, { name: 'heap', description: '', type: 'TEXT_HIGH_QUALITY', config: textKbConfig(NO_EMBEDDING) });
  const t = performance.now();
  let i = 0;
  for (;;) {
    const batch = Array.from({ length: 500 }, (_, j) => replicaText(data.corpus, i + j));
    i += batch.length;
    await Promise.all(batch.map((it) => engine.addContent(ORG, kb.id, { text: it.text, metadata: { sciId: it.source } })));
    while (engine.stats().queueDepth > 2000) await Bun.sleep(50);
    if (engine.stats().chunks + engine.stats().queueDepth * 1.1 >= target) break;
  }
  while (engine.stats().queueDepth > 0) await Bun.sleep(100);
  console.log(`filled ${dataDir}: ${i} items, ${engine.stats().chunks} chunks in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  await engine.close();
}

async function measure(): Promise<void> {
  const h0 = await heap();
  const rss0 = rssOf('self');
  const engine = await Engine.open({ dataDir, compute: { documentWorkers: 1 }, log: () => {} });
  const kbId = [...(engine as any).state.kbs.keys()][0] as string;
  const kb = engine.knowledgeBase(kbId) as any;
  const tFirst = performance.now();
  searchFullText(kb, analyze('vitamin D deficiency'), 10);
  console.log(`first search (settles every item's group): ${(performance.now() - tFirst).toFixed(0)} ms`);
  const h1 = await heap();
  // Full-text latency through the engine's own path (hits materialized: texts read from the store).
  const { data } = await loadCorpus();
  const qs = data.queries.map((q) => analyze(q.text));
  const times: number[] = [];
  for (let round = 0; round < 4; round++)
    for (const q of qs) {
      const t = performance.now();
      searchFullText(kb, q, 10);
      if (round > 0) times.push(performance.now() - t);
    }
  times.sort((a, b) => a - b);
  const pct = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!.toFixed(3);
  console.log(`full-text (engine, k=10, ${qs.length} SciFact queries × 3): p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms`);
  const chunks = kb.chunkCount as number;
  const items = kb.contents.size as number;
  const rssOpen = rssOf('self');
  // The allocator gives freed pages back to the system in the background (bmalloc's scavenger).
  await Bun.sleep(3000);
  await heap();
  console.log(`RSS growth per chunk: ${((rssOpen - rss0) / chunks).toFixed(0)} B at open, ${((rssOf('self') - rss0) / chunks).toFixed(0)} B 3 s later`);
  console.log(
    `${chunks} chunks, ${items} items; heap ${((h1.heap - h0.heap) / chunks).toFixed(0)} B/chunk (of it extra memory ${((h1.extra - h0.extra) / chunks).toFixed(0)}), RSS ${((rssOf('self') - rss0) / chunks).toFixed(0)} B/chunk, objects ${((h1.objects - h0.objects) / chunks).toFixed(1)}/chunk`,
  );
  const top = Object.entries(h1.types)
    .map(([k, v]) => [k, v - (h0.types[k] ?? 0)] as const)
    .filter(([, v]) => v > chunks / 20)
    .sort((a, b) => b[1] - a[1]);
  console.log('object counts per chunk:', top.map(([k, v]) => `${k} ${(v / chunks).toFixed(2)}`).join(', '));
  let chars = 0;
  let wide = 0;
  for (const item of kb.contents.values()) {
    const text = item.current.text as string;
    chars += text.length;
    if (/[^\x00-\xff]/.test(text)) wide++;
  }
  console.log(
    `text: ${(chars / chunks).toFixed(0)} chars/chunk; ${((100 * wide) / items).toFixed(0)}% of items hold a character above U+00FF (2 bytes per char)`,
  );
  const store = (engine as any).texts;
  if (store)
    console.log(
      `text store (a file, outside the heap): ${(store.bytes.live / chunks).toFixed(0)} B/chunk live, ${(store.bytes.dead / chunks).toFixed(0)} dead`,
    );
  let postings = 0;
  let capacity = 0;
  let termIds = 0;
  for (const l of (kb as any).active.bm25.lists) {
    postings += l.length;
    capacity += l.docs.length;
  }
  const docTerms = (kb as any).active.bm25.docTerms;
  for (let d = 0; d < kb.docSpace; d++) termIds += docTerms ? docTerms.read(d).count : ((kb as any).active.bm25.docTermIds[d]?.length ?? 0);
  console.log(
    `bm25: ${(postings / chunks).toFixed(1)} postings/chunk (5 B each: doc id and a one-byte tf), capacity ${(capacity / chunks).toFixed(1)}; ${(kb as any).active.bm25.lists.length} terms; ${(termIds / chunks).toFixed(1)} term ids/chunk${docTerms ? ` (${(docTerms.byteLength / chunks).toFixed(0)} B/chunk packed)` : ' (4 B each)'}`,
  );
  await heap();

  const set = (kb as any).active;
  const bm25 = set.bm25 as any;
  let last = h1;
  const rows: [string, number][] = [];
  const step = async (name: string, drop: () => void) => {
    drop();
    const h = await heap();
    rows.push([name, (last.heap - h.heap) / chunks]);
    last = h;
  };
  await step('item text (ContentVersion.text)', () => {
    for (const item of kb.contents.values()) item.current.text = '';
  });
  if (Array.isArray(set.chunks)) {
    await step('chunk id strings', () => {
      for (const slot of set.chunks) if (slot) slot.id = '';
    });
  }
  await step('chunk table (slots)', () => {
    if (Array.isArray(set.chunks)) set.chunks.length = 0;
    else set.chunks = undefined;
  });
  await step('metadata index', () => {
    set.metadataIndex.postings.clear();
  });
  await step('bm25 per-doc term ids (docTermIds)', () => {
    bm25.docTermIds = [];
    bm25.docTerms = undefined;
  });
  await step('bm25 posting lists', () => {
    bm25.lists.length = 0;
  });
  await step('bm25 term dictionary (Map + term strings)', () => {
    bm25.termIds.clear();
    bm25.terms.length = 0;
  });
  await step('bm25 groups (members, overlaps)', () => {
    bm25.members.clear();
    bm25.overlaps.clear();
  });
  await step('bm25 per-doc typed arrays', () => {
    for (const k of ['docLength', 'alive', 'groupOf', 'spanStart', 'spanEnd']) bm25[k] = new Uint8Array(0);
  });
  await step('item live chunk lists (LiveChunks.docs)', () => {
    set.live.clear();
    for (const item of kb.contents.values()) item.live = undefined;
  });
  await step('item metadata objects', () => {
    for (const item of kb.contents.values()) item.current.metadata = {};
  });
  await step('items (objects, ids, dates, versions, maps)', () => {
    kb.contents.clear();
    kb.order.length = 0;
  });
  const hEnd = last;
  rows.push(['rest of the engine (not freed above)', (hEnd.heap - h0.heap) / chunks]);
  console.log('\nJS heap bytes per chunk by part (what dropping it frees; heapSize counts extra memory: string and typed array buffers):');
  for (const [name, b] of rows) console.log(`  ${name.padEnd(44)} ${b.toFixed(0).padStart(6)}`);
  console.log(`  ${'total'.padEnd(44)} ${((h1.heap - h0.heap) / chunks).toFixed(0).padStart(6)}`);
  const rest = Object.entries(hEnd.types)
    .map(([k, v]) => [k, v - (h0.types[k] ?? 0)] as const)
    .filter(([, v]) => v > chunks / 20)
    .sort((a, b) => b[1] - a[1]);
  console.log('objects left per chunk:', rest.map(([k, v]) => `${k} ${(v / chunks).toFixed(2)}`).join(', '));
  process.exit(0);
}

if (values.measure) await measure();
else {
  if (!existsSync(dataDir) || readdirSync(dataDir).length === 0) await fill();
  const child = Bun.spawn([process.execPath, import.meta.path, '--measure', '--chunks', String(target), '--dir', dataDir], {
    stdout: 'inherit',
    stderr: 'inherit',
  });
  process.exit(await child.exited);
}
