// Ingestion progress you can watch: items by status, chunks still to index, the pace over the last
// minute and the time left at that pace — per knowledge base (its read) and in total (/metrics).
import type { ContentItem, KnowledgeBase } from '../kb/knowledge-base';

export interface IngestionProgress {
  contents: { pending: number; processing: number; ready: number; failed: number };
  /** Chunks of the items still pending or processing, estimated from their text length. */
  chunksWaiting: number;
  /** Chunks indexed per second over the last minute (0 when nothing was indexed in it). */
  chunksPerSecond: number;
  /** Seconds to index what is waiting at that pace; 0 when nothing waits, null when there is no pace yet. */
  etaSeconds: number | null;
}

const WINDOW_MS = 60_000;

interface Batch {
  startedAt: number;
  endedAt: number;
  chunks: number;
}

/**
 * Chunks indexed per second over a sliding minute, per knowledge base. The rate divides by the time
 * since the oldest batch in the window began (at most a minute), so a load that started ten seconds
 * ago reads its real pace instead of a sixth of it.
 */
export class ThroughputMeter {
  private readonly batches = new Map<string, Batch[]>();

  constructor(private readonly clock: () => number = Date.now) {}

  record({ kbId, chunks, millis }: { kbId: string; chunks: number; millis: number }): void {
    const endedAt = this.clock();
    let list = this.batches.get(kbId);
    if (!list) this.batches.set(kbId, (list = []));
    list.push({ startedAt: endedAt - millis, endedAt, chunks });
    this.prune(kbId, list, endedAt);
  }

  /** Chunks per second over the last minute: of one knowledge base, or of all together. */
  perSecond(kbId?: string): number {
    const now = this.clock();
    const lists = kbId === undefined ? [...this.batches.entries()] : [[kbId, this.batches.get(kbId) ?? []] as const];
    let chunks = 0;
    let since = now;
    for (const [id, list] of lists) {
      this.prune(id, list, now);
      for (const b of list) {
        chunks += b.chunks;
        since = Math.min(since, b.startedAt);
      }
    }
    if (chunks === 0) return 0;
    const seconds = Math.max(1000, Math.min(WINDOW_MS, now - since)) / 1000;
    return chunks / seconds;
  }

  private prune(kbId: string, list: Batch[], now: number): void {
    let drop = 0;
    while (drop < list.length && list[drop]!.endedAt < now - WINDOW_MS) drop++;
    if (drop > 0) list.splice(0, drop);
    if (list.length === 0) this.batches.delete(kbId);
  }
}

/**
 * From each knowledge base's tally (no item walked but those processing, the batches in flight).
 * `done`: chunks already indexed of an item still processing (a large one, in runs).
 */
export function progressOf(kbs: Iterable<KnowledgeBase>, chunksPerSecond: number, done: (item: ContentItem) => number = () => 0): IngestionProgress {
  const contents = { pending: 0, processing: 0, ready: 0, failed: 0 };
  let chunksWaiting = 0;
  for (const { tally } of kbs) {
    contents.pending += tally.counts.pending;
    contents.processing += tally.counts.processing;
    contents.ready += tally.counts.ready;
    contents.failed += tally.counts.failed;
    chunksWaiting += tally.waitingChunks;
    for (const item of tally.processing) chunksWaiting -= Math.min(tally.estimate(item), done(item));
  }
  const etaSeconds = chunksWaiting === 0 ? 0 : chunksPerSecond > 0 ? Math.ceil(chunksWaiting / chunksPerSecond) : null;
  return { contents, chunksWaiting, chunksPerSecond: Math.round(chunksPerSecond * 10) / 10, etaSeconds };
}
