// The stack a user would otherwise pick: PostgreSQL full-text search and pgvector, run in process
// through PGlite (Postgres compiled to WASM, @electric-sql/pglite with @electric-sql/pglite-pgvector),
// on the same SciFact documents and queries as the engine:
//   full-text  to_tsvector('english') in a stored column with a GIN index, ts_rank ordering;
//              queries as plainto_tsquery (every word required: AND) and with its lexemes OR-ed
//              (what natural-language queries need to match anything);
//   vectors    pgvector cosine distance (<=>) exact (sequential scan) and through an HNSW index
//              (vector_cosine_ops, default m 16 / ef_construction 64 / ef_search 40), on the same
//              hashed 384-d vectors the engine's benchmarks use (bench/lib/hash-embed.ts, not a neural model);
//   engine     the engine's BM25 index on the same documents and the same query sample, beside it.
// nDCG@10 / Recall@100 at 1× (every query), latency p50/p99 at 1× and at R× (replicated corpus).
//
//   bun bench/peers-pglite.ts [--replicas 10] [--quick] [--hnsw-replicated] [--json out.json]
import { parseArgs } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { analyze } from '../engine';
import { loadConfig } from '../src/config';
import { loadCorpus, replicaTexts, sampleWorkload } from './lib/corpus';
import { InvertedIndex, processContent, type ProcessedChunk } from './lib/engine-internals';
import { evaluate, rankDocuments, type Quality } from './lib/eval-data';
import { f4, fmtInt, fmtMs } from './lib/format';
import { hashEmbed } from './lib/hash-embed';
import { machine } from './lib/machine';
import { spread, summarize, type Latency } from './lib/stats';
import { printTable } from './lib/table';

const { values: args } = parseArgs({
  options: {
    replicas: { type: 'string' },
    quick: { type: 'boolean', default: false },
    'hnsw-replicated': { type: 'boolean', default: false },
    json: { type: 'string' },
  },
  strict: true,
});
const quick = args.quick;
const replicas = Math.max(1, Number(args.replicas ?? (quick ? 2 : 10)));
const K = 10;
const DEPTH = 100;
const started = performance.now();
const { data, generated } = await loadCorpus();
// Quick mode: a sample of judged queries over their relevant documents and an even spread of others.
const { corpus, queries } = quick ? sampleWorkload(data, 60, { documents: 1000 }) : { corpus: data.corpus, queries: data.queries };
// At R× each query costs R times as much for Postgres (OR-ed ts_rank and exact vectors scan every
// match or row): time a spread sample there.
const SAMPLE = { and: quick ? 30 : 300, or: quick ? 15 : 60, exact: quick ? 10 : 40, hnsw: quick ? 30 : 300 };

const cfg = loadConfig();
const chunking = { size: cfg.chunking.size ?? 2000, overlap: cfg.chunking.overlap ?? 200 };
const bm25 = cfg.bm25;
console.log(
  `PGlite peers: ${corpus.length} ${generated ? 'generated' : 'SciFact'} documents at 1× and ${replicas}×, ${queries.length} queries; ` +
    `vectors: hashed 384-d (the engine benchmarks' stub, not a neural model)`,
);

const vectorLiteral = (v: Float32Array) => `[${Array.from(v, (x) => Math.round(x * 1e6) / 1e6).join(',')}]`;
const queryVectors = new Map(queries.map((q) => [q.id, vectorLiteral(hashEmbed(q.text))]));

const SQL = {
  and: `SELECT sci, ts_rank(tsv, q) AS r FROM docs, plainto_tsquery('english', $1) q WHERE tsv @@ q ORDER BY r DESC LIMIT $2`,
  or: `SELECT sci, ts_rank(tsv, q) AS r FROM docs, CAST(replace(plainto_tsquery('english', $1)::text, '&', '|') AS tsquery) q WHERE tsv @@ q ORDER BY r DESC LIMIT $2`,
  vector: `SELECT sci FROM docs ORDER BY emb <=> $1::vector LIMIT $2`,
};

let postgresVersion: string | undefined;

interface SizeResult {
  replicas: number;
  rows: number;
  loadMs: number;
  ginMs: number;
  hnswMs?: number;
  tableBytes?: number;
  latency: Record<string, Latency & { queries: number }>;
}

async function timeQueries(db: PGlite, sql: string, params: (q: (typeof queries)[number]) => unknown[], sample: readonly (typeof queries)[number][]) {
  await db.query(sql, params(sample[0]!)); // plan cache, buffers
  const samples: number[] = [];
  for (const q of sample) {
    const t = performance.now();
    await db.query(sql, params(q));
    samples.push(performance.now() - t);
  }
  return { ...summarize(samples), queries: sample.length };
}

async function measure(r: number, withQuality: boolean): Promise<{ size: SizeResult; quality?: Record<string, Quality> }> {
  const items = replicaTexts(corpus, corpus.length * r);
  const db = await PGlite.create({ extensions: { vector } });
  try {
    postgresVersion ??= (await db.query<{ v: string }>('SELECT version() AS v')).rows[0]?.v;
    await db.exec(`CREATE EXTENSION IF NOT EXISTS vector;
      CREATE TABLE docs (id serial PRIMARY KEY, sci text NOT NULL, body text NOT NULL, tsv tsvector, emb vector(384));`);
    let t = performance.now();
    for (let i = 0; i < items.length; i += 250) {
      const batch = items.slice(i, i + 250);
      await db.query(
        `INSERT INTO docs (sci, body, tsv, emb) SELECT s, b, to_tsvector('english', b), e::vector FROM unnest($1::text[], $2::text[], $3::text[]) AS t(s, b, e)`,
        [batch.map((d) => d.source), batch.map((d) => d.text), batch.map((d) => vectorLiteral(hashEmbed(d.text)))],
      );
    }
    const loadMs = performance.now() - t;
    t = performance.now();
    await db.exec('CREATE INDEX docs_tsv ON docs USING gin (tsv); ANALYZE docs;');
    const ginMs = performance.now() - t;
    const tableBytes = Number((await db.query<{ b: string }>(`SELECT pg_total_relation_size('docs')::text AS b`)).rows[0]?.b ?? NaN);
    console.log(
      `  ${r}×: ${fmtInt(items.length)} rows inserted (to_tsvector + vector) in ${(loadMs / 1000).toFixed(1)} s, GIN index ${(ginMs / 1000).toFixed(1)} s, table + indexes ${(tableBytes / 2 ** 20).toFixed(0)} MiB`,
    );

    const text = (q: (typeof queries)[number]) => [q.text, K];
    const vec = (q: (typeof queries)[number]) => [queryVectors.get(q.id)!, K];
    const all = r === 1;
    const latency: SizeResult['latency'] = {};
    latency['full-text AND (plainto_tsquery)'] = await timeQueries(db, SQL.and, text, all ? queries : spread(queries, SAMPLE.and));
    latency['full-text OR (lexemes OR-ed)'] = await timeQueries(db, SQL.or, text, all ? queries : spread(queries, SAMPLE.or));
    latency['pgvector exact (seq scan)'] = await timeQueries(db, SQL.vector, vec, all ? queries : spread(queries, SAMPLE.exact));

    let quality: Record<string, Quality> | undefined;
    const rankAll = async (sql: string, params: (q: (typeof queries)[number]) => unknown[]) => {
      const out = new Map<string, string[]>();
      for (const q of queries)
        out.set(
          q.id,
          (await db.query<{ sci: string }>(sql, params(q))).rows.map((row) => row.sci),
        );
      return out;
    };
    if (withQuality && !generated) {
      const deep = (q: (typeof queries)[number]) => [q.text, DEPTH];
      const deepVec = (q: (typeof queries)[number]) => [queryVectors.get(q.id)!, DEPTH];
      const rankings: Record<string, Map<string, string[]>> = {
        'full-text AND (plainto_tsquery)': await rankAll(SQL.and, deep),
        'full-text OR (lexemes OR-ed)': await rankAll(SQL.or, deep),
        'pgvector exact (seq scan)': await rankAll(SQL.vector, deepVec),
      };
      quality = Object.fromEntries(Object.entries(rankings).map(([k, m]) => [k, evaluate(data, (q) => m.get(q.id) ?? [], queries)]));
    }

    let hnswMs: number | undefined;
    if (r === 1 || args['hnsw-replicated']) {
      t = performance.now();
      await db.exec('CREATE INDEX docs_emb ON docs USING hnsw (emb vector_cosine_ops);');
      hnswMs = performance.now() - t;
      console.log(`  ${r}×: pgvector HNSW index built in ${(hnswMs / 1000).toFixed(1)} s`);
      latency['pgvector HNSW'] = await timeQueries(db, SQL.vector, vec, all ? queries : spread(queries, SAMPLE.hnsw));
      if (quality) {
        // ef_search (default 40) caps how many rows an HNSW scan returns: 100 for the depth-100 ranking.
        await db.exec('SET hnsw.ef_search = 100;');
        const m = await rankAll(SQL.vector, (q) => [queryVectors.get(q.id)!, DEPTH]);
        await db.exec('RESET hnsw.ef_search;');
        quality['pgvector HNSW'] = evaluate(data, (q) => m.get(q.id) ?? [], queries);
      }
    }
    return { size: { replicas: r, rows: items.length, loadMs, ginMs, hnswMs, tableBytes, latency }, quality };
  } finally {
    await db.close();
  }
}

// The engine's BM25 index on the same items (each document analyzed once, copies share its chunks).
function engineFullText(r: number, sample: readonly (typeof queries)[number][]) {
  const processed: ProcessedChunk[][] = corpus.map((d) => processContent({ text: d.text, chunking }));
  const index = new InvertedIndex(bm25);
  const owner: string[] = [];
  for (let copy = 0; copy < r; copy++) {
    processed.forEach((chunks, i) => {
      for (const c of chunks) {
        index.add(owner.length, c);
        owner.push(corpus[i]!.id);
      }
    });
  }
  const run = (q: (typeof queries)[number], k: number) => index.search(analyze(q.text), k);
  for (const q of sample.slice(0, 20)) run(q, K);
  const samples: number[] = [];
  for (const q of sample) {
    const t = performance.now();
    run(q, K);
    samples.push(performance.now() - t);
  }
  const quality = r === 1 && !generated ? evaluate(data, (q) => rankDocuments(run(q, DEPTH), (h) => owner[h.doc]!).map((d) => d.id), queries) : undefined;
  return { chunks: owner.length, latency: { ...summarize(samples), queries: sample.length }, quality };
}

const one = await measure(1, true);
const many = replicas > 1 ? await measure(replicas, false) : undefined;
const engine1 = engineFullText(1, queries);
const engineR = replicas > 1 ? engineFullText(replicas, spread(queries, SAMPLE.and)) : undefined;

if (one.quality) {
  printTable(
    `Quality on SciFact train at 1× (${queries.length} queries${quick ? ', --quick: sampled documents and queries' : ''})`,
    ['system', 'nDCG@10', 'Recall@100'],
    [
      ['engine BM25 (chunks, best chunk per document)', f4(engine1.quality?.ndcg10), f4(engine1.quality?.recall100)],
      ...Object.entries(one.quality).map(([k, q]) => [`PGlite ${k}`, f4(q.ndcg10), f4(q.recall100)]),
    ],
  );
}
const sizes = [one.size, ...(many ? [many.size] : [])];
printTable(
  `Latency, top ${K}, ms (1×: every query; ${replicas}×: a spread sample, count in brackets)`,
  ['system', ...sizes.flatMap((s) => [`${s.replicas}× p50`, `${s.replicas}× p99`])],
  [
    [
      'engine BM25 (index.search incl. analysis)',
      fmtMs(engine1.latency.p50),
      fmtMs(engine1.latency.p99),
      ...(engineR ? [fmtMs(engineR.latency.p50), fmtMs(engineR.latency.p99)] : []),
    ],
    ...Object.keys(one.size.latency).map((k) => [
      `PGlite ${k}`,
      ...sizes.flatMap((s) => {
        const l = s.latency[k];
        return l ? [fmtMs(l.p50), `${fmtMs(l.p99)} (${l.queries})`] : ['-', '-'];
      }),
    ]),
  ],
);

const results = {
  part: 'pglite',
  mode: quick ? 'quick' : 'full',
  date: new Date().toISOString(),
  machine: machine(),
  postgres: postgresVersion,
  settings: {
    documents: corpus.length,
    queries: queries.length,
    replicas,
    k: K,
    depth: DEPTH,
    samples: SAMPLE,
    vectors: 'hashed 384-d (bench/lib/hash-embed.ts hashEmbed)',
    sql: SQL,
  },
  quality: one.quality ? { engine: engine1.quality, ...one.quality } : undefined,
  sizes,
  engine: [{ replicas: 1, ...engine1 }, ...(engineR ? [{ replicas, ...engineR }] : [])],
  millis: Math.round(performance.now() - started),
};
console.log(`\nPGlite peers done in ${(results.millis / 1000).toFixed(1)} s`);
if (args.json) await Bun.write(args.json, `${JSON.stringify(results, null, 2)}\n`);
process.exit(0);
