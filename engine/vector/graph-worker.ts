// The HNSW graph builder's thread (engine/vector/graph-builder.ts): holds a copy of each graph it is
// building, inserts the vectors of each job into it, and saves it to a file when asked; the main
// thread then serves a view of that file. One message at a time, in order, so a save holds every
// job sent before it. Runs below the request thread's priority, like the document lane.
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Index } from 'usearch';
import { createPrivateFile } from '../fsync';
import { insertIntoGraph, newGraph, releaseGraph, removeFromGraph, type GraphShape } from './graph-insert';
import { BACKGROUND_NICENESS, lowerThreadPriority } from '../workers/priority';
import type { GraphJob } from './vector-index';

export type GraphRequest =
  | { t: 'init'; stop: Int32Array }
  | ({ t: 'add'; id: number; shape: GraphShape; threads: number } & GraphJob)
  | { t: 'save'; id: number; gen: number; path: string }
  | { t: 'drop'; id: number }
  | { t: 'stop' };

export type GraphReply =
  | { t: 'added'; id: number; gen: number; seq: number; ms: number }
  | { t: 'saved'; id: number; gen: number; seq: number; path: string; ms: number }
  | { t: 'error'; id: number; gen: number; message: string };

declare const self: Worker;

lowerThreadPriority(BACKGROUND_NICENESS);

/** Set by the builder when it stops: requests still queued are skipped, a file just saved is removed. */
let stopFlag: Int32Array | undefined;
const stopping = () => stopFlag !== undefined && Atomics.load(stopFlag, 0) === 1;

/** Per graph (the builder's id): the generation held and the last job applied. */
const graphs = new Map<number, { gen: number; seq: number; index: Index; shape: GraphShape; dir?: string }>();

/**
 * Free a graph's memory now: the collector, which would free it with its wrapper, does not see
 * USearch's memory (a copy is ~565 B a vector), so the copy views an empty graph instead.
 */
function release(held: { index: Index; shape: GraphShape; dir?: string }): void {
  if (held.dir) releaseGraph(held.index, held.shape, join(held.dir, `graph-empty-${process.pid}-${performance.now()}`));
}

function add(req: Extract<GraphRequest, { t: 'add' }>): void {
  let held = graphs.get(req.id);
  if (!held || held.gen !== req.gen) {
    if (held) release(held);
    const index = newGraph(req.shape);
    if (req.base) index.load(req.base);
    held = { gen: req.gen, seq: 0, index, shape: req.shape, dir: req.base && dirname(req.base) };
    graphs.set(req.id, held);
  }
  const { index } = held;
  if (req.removes.length > 0)
    removeFromGraph(
      index,
      BigUint64Array.from(req.removes, (d) => BigInt(d)),
    );
  if (req.docs.length > 0)
    insertIntoGraph(
      index,
      BigUint64Array.from(req.docs, (d) => BigInt(d)),
      req.vectors,
      req.threads,
    );
  held.seq = req.seq;
}

self.onmessage = (event: MessageEvent<GraphRequest>) => {
  const req = event.data;
  if (req.t === 'init') {
    stopFlag = req.stop;
    return;
  }
  if (req.t === 'stop' || stopping()) {
    graphs.clear();
    self.onmessage = null;
    process.exit(0);
  }
  if (req.t === 'drop') {
    const held = graphs.get(req.id);
    graphs.delete(req.id);
    if (held) {
      try {
        release(held);
      } catch {
        // Left to the collector.
      }
    }
    return;
  }
  const started = performance.now();
  try {
    if (req.t === 'add') {
      add(req);
      self.postMessage({ t: 'added', id: req.id, gen: req.gen, seq: req.seq, ms: performance.now() - started } satisfies GraphReply);
    } else {
      const held = graphs.get(req.id);
      if (!held || held.gen !== req.gen) throw new Error(`graph ${req.id} generation ${req.gen} is not held`);
      // Owner-only like the stored vectors (the graph holds an i8 copy of each).
      createPrivateFile(req.path);
      held.index.save(req.path);
      held.dir = dirname(req.path);
      if (stopping()) {
        rmSync(req.path, { force: true });
        return;
      }
      self.postMessage({ t: 'saved', id: req.id, gen: req.gen, seq: held.seq, path: req.path, ms: performance.now() - started } satisfies GraphReply);
    }
  } catch (err) {
    self.postMessage({ t: 'error', id: req.id, gen: req.gen, message: err instanceof Error ? err.message : String(err) } satisfies GraphReply);
  }
};
