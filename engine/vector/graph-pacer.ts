// Background HNSW graph building on the main thread: 5 ms of every 25 ms while requests are being
// served, 20 ms of every 25 ms while idle (a request arriving then waits at most one step).
// Searches stay exact (and correct) until a graph has caught up.
import type { KnowledgeBase } from '../kb/knowledge-base';

export class GraphPacer {
  private timer: ReturnType<typeof setInterval> | undefined;
  private stopped = false;

  constructor(
    private readonly knowledgeBases: () => Iterable<KnowledgeBase>,
    /** True while nothing is asking for the main thread. */
    private readonly idle: () => boolean = () => false,
  ) {}

  /** Vectors were added: build until every graph has caught up. */
  schedule(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => {
      const budget = this.idle() ? 20 : 5;
      let pending = false;
      for (const kb of this.knowledgeBases()) {
        // Small batches: one USearch batch add runs to its end, so the batch bounds the stall.
        if (kb.graphPending > 0) pending = !kb.buildGraphStep(budget, 8) || pending;
      }
      if (!pending) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    }, 25);
    this.timer.unref?.();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
