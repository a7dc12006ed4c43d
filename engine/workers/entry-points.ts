// Every worker thread the service starts, by name → its source file (relative to the project
// root). The pools take their script from here, and scripts/build.ts makes each one an entry
// point of the compiled binary, where it keeps its project path (engine/ingest/worker.ts →
// /$bunfs/root/engine/ingest/worker.js). A worker missing here is missing from the binary.
export const WORKER_ENTRY_POINTS = {
  ingest: 'engine/ingest/worker.ts',
  extract: 'engine/extract/worker.ts',
  snapshot: 'snapshots/worker.ts',
  graph: 'engine/vector/graph-worker.ts',
  graphSearch: 'engine/vector/graph-search-worker.ts',
} as const;

export type WorkerKind = keyof typeof WORKER_ENTRY_POINTS;

/** The project root in the source tree; in the binary this module sits at the embedded root. */
const ROOT = Bun.isStandaloneExecutable ? new URL('./', import.meta.url) : new URL('../../', import.meta.url);

/** Where the worker script of `kind` is, from source or inside the compiled binary. */
export function workerUrl(kind: WorkerKind): URL {
  return new URL(WORKER_ENTRY_POINTS[kind], ROOT);
}
