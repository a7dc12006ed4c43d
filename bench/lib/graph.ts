// Waiting for the engine's HNSW graph workers to take every vector, for benchmarks that time what
// follows (a snapshot, a restart) and not the graph still being built.
import type { Engine } from '../../engine';

/** Vectors of every knowledge base not in its graph yet. */
export async function graphPending(engine: Engine): Promise<number> {
  return Object.values((await engine.metrics()).byType).reduce((n, t) => n + t.graphPending, 0);
}

/** Resolves once no vector is pending; `progress` is told the count every 30 s. */
export async function graphComplete(engine: Engine, progress: (pending: number) => void = () => {}): Promise<void> {
  for (let pending = await graphPending(engine), s = 0; pending > 0; pending = await graphPending(engine), s++) {
    if (s % 60 === 0) progress(pending);
    await Bun.sleep(500);
  }
}
