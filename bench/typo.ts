// Typo tolerance (issue 26) on SciFact, in process, on against off:
//   quality   nDCG@10 / Recall@100 at 1× with the queries as written (tolerance must not lower
//             it) and with one typo put into each query (a swap of two letters in one word of 5+
//             letters, a seeded choice): what tolerance wins back;
//   latency   the full-text endpoint's work without HTTP (query parsing, expansion, ranking, top
//             10) on the corpus replicated R times: the first pass over the queries (each word's
//             near terms walked for the first time) and later passes (remembered).
//
//   bun bench/typo.ts [--quick] [--replicas 10] [--json out.json]
import { writeFileSync } from 'node:fs';
import { mulberry32 } from '../support/random';
import { loadSciFact, type Query } from './lib/eval-data';
import { f4, fmtMs } from './lib/format';
import { machine } from './lib/machine';
import { summarize, timeEach } from './lib/stats';
import { printTable } from './lib/table';
import { benchQuery, buildEngine, engineQuality, indexChunks, processItems, rankFullText, replicate } from './fulltext/engine-index';
import { args, bm25, chunking, LATENCY_K, quick, replicas } from './fulltext/options';

/** The query with two neighbouring letters of one of its longer words swapped (one typo). */
function misspell(text: string, random: () => number): string {
  const words = [...text.matchAll(/\p{L}{5,}/gu)];
  if (words.length === 0) return text;
  const w = words[Math.floor(random() * words.length)]!;
  // Not the first letter: a typo there counts as two (the rule), which would test the rule, not the feature.
  const at = w.index! + 1 + Math.floor(random() * (w[0].length - 2));
  return text.slice(0, at) + text[at + 1] + text[at] + text.slice(at + 2);
}

const data = await loadSciFact();
if (!data) {
  console.log('SciFact not found (set SCIFACT_DIR); skipping the typo benchmark.');
  process.exit(0);
}
const random = mulberry32(26);
const misspelt: Query[] = data.queries.map((q) => ({ ...q, text: misspell(q.text, random) }));

const built = indexChunks(
  processItems(data.corpus, chunking),
  data.corpus.map((d) => d.text),
  bm25,
);
const quality = {
  asWritten: { off: engineQuality(data, built, undefined, false, false), on: engineQuality(data, built, undefined, false, true) },
  misspelt: {
    off: engineQuality({ ...data, queries: misspelt }, built, misspelt, false, false),
    on: engineQuality({ ...data, queries: misspelt }, built, misspelt, false, true),
  },
};
printTable(
  `Full-text quality on SciFact train at 1× (${quality.asWritten.on.queries} queries), typo tolerance off → on`,
  ['queries', 'nDCG@10 off', 'nDCG@10 on', 'Recall@100 off', 'Recall@100 on'],
  Object.entries(quality).map(([name, q]) => [name, f4(q.off.ndcg10), f4(q.on.ndcg10), f4(q.off.recall100), f4(q.on.recall100)]),
);

// Latency: a fresh index per setting, so the first pass walks every word's near terms anew.
const items = replicate(data.corpus, data.corpus.length * replicas);
const texts = data.queries.map((q) => q.text);
const passes = quick ? 1 : 2;
const latency: Record<string, { first: ReturnType<typeof summarize>; later: ReturnType<typeof summarize> }> = {};
let chunks = 0;
for (const typo of [false, true]) {
  const { index, items: view, chunks: n } = buildEngine(items, chunking, bm25);
  chunks = n;
  const search = (text: string) => rankFullText(index, view, benchQuery(index, view, text, false, typo), LATENCY_K, false);
  search('warm up the analyzer and the first sort of the vocabulary');
  latency[typo ? 'on' : 'off'] = { first: summarize(timeEach(texts, 1, search)), later: summarize(timeEach(texts, passes, search)) };
}
printTable(
  `Full-text search incl. parsing and expansion, ${items.length} items (${replicas}×, ${chunks} chunks), top ${LATENCY_K}, ${texts.length} queries, ms`,
  ['typo tolerance', 'first pass p50', 'p99', `later passes (${passes}) p50`, 'p99'],
  Object.entries(latency).map(([k, l]) => [k, fmtMs(l.first.p50), fmtMs(l.first.p99), fmtMs(l.later.p50), fmtMs(l.later.p99)]),
);
if (args.json) writeFileSync(args.json, `${JSON.stringify({ machine: machine(), replicas, chunks, quality, latency }, null, 2)}\n`);
