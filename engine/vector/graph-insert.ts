// USearch graphs as every thread makes, fills and lets go of them: the main thread, the builder's
// worker (graph-worker.ts) and the searcher's (graph-search-worker.ts) alike.
import { rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Index, MetricKind, ScalarKind } from 'usearch';
import { createPrivateFile } from '../fsync';

/** What a graph is made with; a view of a saved graph must be opened with the same. */
export interface GraphShape {
  dimensions: number;
  connectivity: number;
  expansionAdd: number;
  expansionSearch: number;
}

/** An empty graph: i8 copies of the vectors (USearch scales each to ±127 by its norm), cosine. */
export function newGraph(shape: GraphShape): Index {
  return new Index({
    dimensions: shape.dimensions,
    metric: MetricKind.Cos,
    quantization: ScalarKind.I8,
    connectivity: shape.connectivity,
    expansion_add: shape.expansionAdd,
    expansion_search: shape.expansionSearch,
    multi: false,
  });
}

/**
 * Free what a graph holds now, not when the collector gets to it (it does not see USearch's memory,
 * and a view keeps its file mapped, removed or not): the graph views an empty one instead, saved
 * at `emptyPath` for the moment.
 */
export function releaseGraph(graph: Index, shape: GraphShape, emptyPath: string): void {
  try {
    createPrivateFile(emptyPath);
    newGraph(shape).save(emptyPath);
    graph.view(emptyPath);
  } finally {
    rmSync(emptyPath, { force: true });
  }
}

/**
 * Put `vectors` (row i for keys[i]) into the graph on `threads` threads (0: every core), replacing
 * keys it already holds (a document stored again).
 *
 * USearch keeps one insertion context per thread, reserved only when a batch needs more room, for
 * as many threads as that batch used. A later batch on more threads than were reserved then fails
 * part-way ("Reserve capacity ahead of insertions!"): the graph builder asks for one thread while
 * requests run and every core when idle, so a reservation made while busy broke the first idle
 * batch, and the engine fell back to building every graph on its main thread for good. What such a
 * batch could not insert goes in on one thread. (Reserving for every core whenever a batch makes
 * room would spread busy-time batches over two threads too, and that graph found itself less
 * often: 3 of 5,000 vectors were not their own nearest in test/engine/graph-builder.test.ts.)
 */
export function insertIntoGraph(index: Index, keys: BigUint64Array, vectors: Float32Array, threads: number): void {
  removeFromGraph(index, keys);
  const wanted = threads > 0 ? threads : availableParallelism();
  try {
    index.add(keys, vectors, wanted);
  } catch (err) {
    if (wanted === 1 || !String(err instanceof Error ? err.message : err).includes('Reserve capacity')) throw err;
    const added = index.contains(keys) as boolean[];
    const rest = keys.filter((_k, i) => !added[i]);
    if (rest.length === 0) return;
    const dims = vectors.length / keys.length;
    const rows = new Float32Array(rest.length * dims);
    let r = 0;
    for (let i = 0; i < keys.length; i++) if (!added[i]) rows.set(vectors.subarray(i * dims, (i + 1) * dims), dims * r++);
    index.add(rest, rows, 1);
  }
}

/** Remove those of `keys` the graph holds (USearch refuses to remove a key it lacks). */
export function removeFromGraph(index: Index, keys: BigUint64Array): void {
  const present = index.contains(keys) as boolean[];
  const held = keys.filter((_k, i) => present[i]);
  if (held.length > 0) index.remove(held);
}
