// bench/semantic.ts, part 2: the semantic leg alone (VectorIndex) at ~50k chunk vectors: HNSW build
// rate, search latency and recall@10 against exact search, f32 and i8, and the size at which HNSW
// overtakes exact search.
import { VectorIndex } from '../../engine';
import { mulberry32 } from '../../support/random';
import { DEFAULT_EXACT_THRESHOLD } from '../lib/engine-internals';
import { f4, fmtInt, fmtMs, secs } from '../lib/format';
import { spread, summarize, timeEach, type Latency } from '../lib/stats';
import { printTable } from '../lib/table';
import { gaussian, noisyCopy } from '../lib/vectors';
import { serverConfig, useLite, type Quantization } from './models';
import { NOISE_NORM, P50_TARGET_MS, quick, RECALL_TARGET, SIZES } from './options';
import { prepare, queryVectors } from './prepare';
import { readWal } from './wal';
import type { Workload } from './workload';

/** Top-10 hits of a search: { doc, score } best first. */
type Hits = ReturnType<VectorIndex['exact']>;

interface BaseVectors {
  vectors: Float32Array[];
  queries: Float32Array[];
}

/** USE-Lite chunk vectors of the corpus and the query vectors, from the quality part's cache. */
async function useLiteVectors(work: Workload): Promise<BaseVectors> {
  const model = useLite();
  const prepared = await prepare(model, work, { graph: false }); // reopens the cache (or builds it)
  await prepared.engine.close();
  const { vectors: qv } = await queryVectors(model, prepared.dir, work.queries);
  const wal = readWal(prepared.dir);
  return { vectors: wal.items.flatMap((i) => i.vectors!), queries: work.queries.map((q) => qv.get(q.id)!) };
}

/** The base vectors first, then noisy copies of them (renormalized) up to `total`. */
function replicateVectors(base: readonly Float32Array[], total: number): Float32Array[] {
  const normal = gaussian(mulberry32(42));
  return Array.from({ length: total }, (_, i) => (i < base.length ? base[i]! : noisyCopy(base[i % base.length]!, normal, NOISE_NORM)));
}

function recallAt10(approx: readonly { doc: number }[], exact: readonly { doc: number }[]): number {
  const truth = new Set(exact.map((h) => h.doc));
  return truth.size === 0 ? 1 : approx.filter((h) => truth.has(h.doc)).length / truth.size;
}

interface IndexPoint {
  size: number;
  exact: Latency;
  hnsw: Latency;
  recall10: number;
  buildMs: number;
}

function newIndex(quantization: Quantization, expansionSearch = serverConfig.hnsw.expansionSearch, exactThreshold?: number): VectorIndex {
  return new VectorIndex({
    dimensions: 512,
    quantization,
    connectivity: serverConfig.hnsw.connectivity,
    expansionAdd: serverConfig.hnsw.expansionAdd,
    expansionSearch,
    exactThreshold,
  });
}

/** Add vectors [from, to) and finish the graph; returns the milliseconds the graph took. */
function grow(index: VectorIndex, vectors: readonly Float32Array[], from: number, to: number): { addMs: number; graphMs: number } {
  const t0 = performance.now();
  for (let d = from; d < to; d++) index.add(d, index.quantize(vectors[d]!));
  const t1 = performance.now();
  while (!index.buildStep(1000, 256));
  return { addMs: t1 - t0, graphMs: performance.now() - t1 };
}

function measurePoint(index: VectorIndex, queries: readonly Float32Array[], passes: number, exactQueries: readonly Float32Array[], groundTruth?: Hits[]) {
  if (!index.graphReady) throw new Error('graph not ready');
  timeEach(queries.slice(0, 20), 1, (q) => index.search(q, 10)); // warm-up
  const truth = groundTruth ?? queries.map((q) => index.exact(q, 10));
  const recall = queries.reduce((s, q, i) => s + recallAt10(index.search(q, 10), truth[i]!), 0) / queries.length;
  const hnsw = summarize(timeEach(queries, passes, (q) => index.search(q, 10)));
  const exact = summarize(timeEach(exactQueries, 1, (q) => index.exact(q, 10)));
  return { recall10: recall, hnsw, exact, truth };
}

export async function vectorPart(work: Workload) {
  const base = await useLiteVectors(work);
  const target = SIZES.vectorTarget;
  const all = replicateVectors(base.vectors, target);
  console.log(
    `  ${fmtInt(base.vectors.length)} USE-Lite chunk vectors (512-d) of the ${quick ? 'quick ' : ''}corpus replicated with Gaussian noise (norm ${NOISE_NORM}) to ${fmtInt(target)}; ` +
      `${base.queries.length} SciFact query vectors; HNSW M=${serverConfig.hnsw.connectivity}, efConstruction=${serverConfig.hnsw.expansionAdd}, efSearch=${serverConfig.hnsw.expansionSearch}`,
  );
  const curveQueries = spread(base.queries, SIZES.curveQueries);
  const out: Record<string, unknown> = { baseVectors: base.vectors.length, target, queries: base.queries.length, noiseNorm: NOISE_NORM };
  for (const quantization of ['f32', 'i8'] as const) {
    // One index grown through every size (graph from the first vector, so HNSW answers at each size).
    const index = newIndex(quantization, undefined, 1);
    const curve: IndexPoint[] = [];
    let built = 0;
    let totalGraphMs = 0;
    let totalAddMs = 0;
    for (const size of SIZES.curve.filter((s) => s <= target)) {
      const { addMs, graphMs } = grow(index, all, built, size);
      totalGraphMs += graphMs;
      totalAddMs += addMs;
      built = size;
      const point = measurePoint(index, curveQueries, 2, curveQueries);
      curve.push({ size, exact: point.exact, hnsw: point.hnsw, recall10: point.recall10, buildMs: graphMs });
    }
    // The full target: every query, more passes.
    const full = measurePoint(index, base.queries, SIZES.latencyPasses, spread(base.queries, 300));
    printTable(
      `VectorIndex ${quantization}, ${fmtInt(target)} vectors: search(q, 10) through HNSW vs exact(q, 10), ${base.queries.length} queries × ${SIZES.latencyPasses} passes, ms`,
      ['', 'p50', 'p95', 'p99', 'mean', 'recall@10'],
      [
        ['HNSW search (re-scored)', fmtMs(full.hnsw.p50), fmtMs(full.hnsw.p95), fmtMs(full.hnsw.p99), fmtMs(full.hnsw.mean), f4(full.recall10)],
        ['exact (300 queries)', fmtMs(full.exact.p50), fmtMs(full.exact.p95), fmtMs(full.exact.p99), fmtMs(full.exact.mean), '1'],
      ],
    );
    console.log(
      `  graph build: ${secs(totalGraphMs)} for ${fmtInt(target)} vectors = ${fmtInt(target / (totalGraphMs / 1000))} vectors/s ` +
        `(buildStep, batches of 256, USearch threads); flat adds ${fmtMs(totalAddMs)} ms; memoryBytes ${(index.memoryBytes() / 2 ** 20).toFixed(1)} MiB`,
    );
    console.log(
      `  targets: p50 ≤ ${P50_TARGET_MS} ms ${full.hnsw.p50 <= P50_TARGET_MS ? 'met' : 'MISSED'}, recall@10 ≥ ${RECALL_TARGET} ${full.recall10 >= RECALL_TARGET ? 'met' : 'MISSED'}`,
    );
    printTable(
      `VectorIndex ${quantization} by size (${curveQueries.length} queries; HNSW × 2 passes, exact × 1), ms`,
      ['vectors', 'exact p50', 'exact p99', 'HNSW p50', 'HNSW p99', 'recall@10', 'graph build ms', 'faster'],
      curve.map((p) => [
        fmtInt(p.size),
        fmtMs(p.exact.p50),
        fmtMs(p.exact.p99),
        fmtMs(p.hnsw.p50),
        fmtMs(p.hnsw.p99),
        f4(p.recall10),
        fmtInt(p.buildMs),
        p.hnsw.p50 < p.exact.p50 ? 'HNSW' : 'exact',
      ]),
    );
    const firstFaster = curve.findIndex((_p, i) => curve.slice(i).every((q) => q.hnsw.p50 < q.exact.p50));
    const crossover =
      firstFaster < 0
        ? `exact stays faster up to ${fmtInt(curve[curve.length - 1]!.size)}`
        : firstFaster === 0
          ? `HNSW is already faster at ${fmtInt(curve[0]!.size)}`
          : `between ${fmtInt(curve[firstFaster - 1]!.size)} and ${fmtInt(curve[firstFaster]!.size)}`;
    // Suggest the first measured size from which HNSW is faster and still meets the recall target.
    const good = curve.findIndex((p, i) => curve.slice(i).every((q) => q.hnsw.p50 < q.exact.p50) && p.recall10 >= RECALL_TARGET);
    const suggested = good < 0 ? undefined : curve[good]!.size;
    console.log(
      `  crossover (HNSW p50 below exact p50 from then on): ${crossover}; DEFAULT_EXACT_THRESHOLD is ${DEFAULT_EXACT_THRESHOLD}` +
        (suggested !== undefined ? `; smallest measured size where HNSW is faster with recall@10 ≥ ${RECALL_TARGET}: ${fmtInt(suggested)}` : ''),
    );

    // Larger efSearch, when the default misses the recall target.
    const sweep: { expansionSearch: number; recall10: number; hnsw: Latency; graphMs: number }[] = [];
    if (full.recall10 < RECALL_TARGET) {
      for (const ef of SIZES.efSweep.filter((e) => e > serverConfig.hnsw.expansionSearch)) {
        const idx = newIndex(quantization, ef);
        const { graphMs } = grow(idx, all, 0, target);
        const point = measurePoint(idx, base.queries, SIZES.latencyPasses, [], full.truth);
        sweep.push({ expansionSearch: ef, recall10: point.recall10, hnsw: point.hnsw, graphMs });
        console.log(`    efSearch ${ef}: recall@10 ${f4(point.recall10)}, p50 ${fmtMs(point.hnsw.p50)} ms, p99 ${fmtMs(point.hnsw.p99)} ms`);
        if (point.recall10 >= RECALL_TARGET) break;
      }
      printTable(
        `efSearch sweep, ${quantization}, ${fmtInt(target)} vectors (each a new index)`,
        ['efSearch', 'recall@10', 'p50', 'p95', 'p99', 'meets both', 'graph build s'],
        [
          [
            serverConfig.hnsw.expansionSearch,
            f4(full.recall10),
            fmtMs(full.hnsw.p50),
            fmtMs(full.hnsw.p95),
            fmtMs(full.hnsw.p99),
            'no',
            (totalGraphMs / 1000).toFixed(1),
          ],
          ...sweep.map((s) => [
            s.expansionSearch,
            f4(s.recall10),
            fmtMs(s.hnsw.p50),
            fmtMs(s.hnsw.p95),
            fmtMs(s.hnsw.p99),
            s.recall10 >= RECALL_TARGET && s.hnsw.p50 <= P50_TARGET_MS ? 'yes' : 'no',
            (s.graphMs / 1000).toFixed(1),
          ]),
        ],
      );
    }
    out[quantization] = {
      full: { hnsw: full.hnsw, exact: full.exact, recall10: full.recall10 },
      suggestedExactThreshold: suggested,
      graphBuildMs: totalGraphMs,
      vectorsPerSecond: target / (totalGraphMs / 1000),
      memoryBytes: index.memoryBytes(),
      curve,
      crossover,
      sweep,
    };
  }
  return out;
}
