// The graph searcher's thread (engine/vector/graph-searcher.ts): holds a read-only view of each
// graph file the request thread has asked it to search (one per vector index, the newest asked),
// and answers one query at a time through shared memory. It never waits on its event loop: between
// queries it sleeps on the state word, and every few seconds lets go of views whose files are gone
// (a newer graph replaced them, or the knowledge base went), so their pages are not held.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Index } from 'usearch';
import { newGraph, releaseGraph, type GraphShape } from './graph-insert';
import { Ctl, searcherMemory, State, type SearcherMemory } from './graph-searcher';

declare const self: Worker;

interface View {
  path: string;
  graph: Index;
  shape: GraphShape;
}

self.onmessage = (event: MessageEvent<{ buffer: SharedArrayBuffer; sweepMs: number }>) => {
  self.onmessage = null;
  serve(searcherMemory(event.data.buffer), event.data.sweepMs);
  process.exit(0);
};

function serve(mem: SearcherMemory, sweepMs: number): void {
  const { ctl } = mem;
  const views = new Map<number, View>();
  /** Files that could not be viewed: declined at once (forgotten at the next sweep). */
  let unviewable = new Set<string>();
  let sweptAt = performance.now();
  const decoder = new TextDecoder();
  const hand = (state: number) => {
    Atomics.store(ctl, Ctl.State, state);
    Atomics.notify(ctl, Ctl.State);
  };
  if (Atomics.compareExchange(ctl, Ctl.State, State.Starting, State.Idle) !== State.Starting) return;
  for (;;) {
    const state = Atomics.load(ctl, Ctl.State);
    if (state === State.Stop) return;
    if (state !== State.Request) {
      // The request thread's turn (idle, or reading an answer): sleep until the word changes.
      Atomics.wait(ctl, Ctl.State, state, sweepMs);
      if (Atomics.load(ctl, Ctl.State) === State.Idle && performance.now() - sweptAt >= sweepMs) {
        sweep(views);
        unviewable = new Set();
        sweptAt = performance.now();
      }
      continue;
    }
    const key = ctl[Ctl.Key]!;
    const path = decoder.decode(mem.path.subarray(0, ctl[Ctl.PathBytes]!));
    const shape: GraphShape = {
      dimensions: ctl[Ctl.Dimensions]!,
      connectivity: ctl[Ctl.Connectivity]!,
      expansionAdd: ctl[Ctl.ExpansionAdd]!,
      expansionSearch: ctl[Ctl.ExpansionSearch]!,
    };
    const held = views.get(key);
    if (held?.path !== path) {
      if (unviewable.has(path)) {
        hand(State.Unavailable);
        continue;
      }
      // Opening a view takes a while (~30 ms at 100k vectors): the request thread searches this
      // one itself and hands the memory back (Viewing) while the view opens.
      hand(State.Stale);
      while (Atomics.load(ctl, Ctl.State) === State.Stale) Atomics.wait(ctl, Ctl.State, State.Stale);
      if (Atomics.load(ctl, Ctl.State) !== State.Viewing) continue;
      try {
        const graph = newGraph(shape);
        graph.view(path);
        if (held) release(held);
        views.set(key, { path, graph, shape });
      } catch {
        unviewable.add(path);
      }
      Atomics.compareExchange(ctl, Ctl.State, State.Viewing, State.Idle);
      continue;
    }
    try {
      const found = held.graph.search(mem.query.subarray(0, shape.dimensions), ctl[Ctl.Beam]!, 0).keys as BigUint64Array;
      mem.keys.set(found);
      ctl[Ctl.Count] = found.length;
      hand(State.Done);
    } catch {
      hand(State.Unavailable);
    }
  }
}

/** Let go of the views whose files are gone. */
function sweep(views: Map<number, View>): void {
  for (const [key, view] of views) {
    if (existsSync(view.path)) continue;
    views.delete(key);
    release(view);
  }
}

function release(view: View): void {
  try {
    releaseGraph(view.graph, view.shape, join(dirname(view.path), `graph-search-empty-${process.pid}-${performance.now()}`));
  } catch {
    // The directory went with its knowledge base: the collector unmaps it.
  }
}
