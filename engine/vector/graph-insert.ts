// Inserting into and removing from a USearch graph, on the worker and on the main thread alike.
import { availableParallelism } from 'node:os';
import type { Index } from 'usearch';

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
