// One large content item across every document worker: a worker handles one request at a time,
// so a 1 MB text sent whole keeps one core busy while the others wait (it indexed at half the
// machine's pace). Its chunk spans are found once (in a worker), then consecutive runs of spans go
// to the workers in parallel and the results are joined in order: the same chunks, terms and
// vectors as one worker would give, in about 1/n of the time.
import type { ChunkSpan } from '../chunking/chunker';
import type { ItemResult } from './handlers';

/** Consecutive runs of `spans`, `parts` at most, of near-equal length (order kept). */
export function splitSpans(spans: readonly ChunkSpan[], parts: number): ChunkSpan[][] {
  const n = Math.max(1, Math.min(parts, spans.length));
  const runs: ChunkSpan[][] = [];
  for (let i = 0; i < n; i++) runs.push(spans.slice(Math.floor((i * spans.length) / n), Math.floor(((i + 1) * spans.length) / n)));
  return runs;
}

/** The results of an item's runs of spans, in order, as one item's result. */
export function joinResults(parts: readonly ItemResult[]): ItemResult {
  const chunks = parts.flatMap((p) => p.chunks ?? []);
  const failed = parts.find((p): p is Extract<ItemResult, { ok: false }> => !p.ok);
  if (failed) {
    // Chunking failed somewhere: nothing to index. Embedding failed: the chunks still serve full-text.
    return parts.every((p) => p.chunks !== undefined) ? { ok: false, error: failed.error, chunks } : { ok: false, error: failed.error };
  }
  const withVectors = parts.filter((p) => p.ok && p.vectors !== undefined).length;
  if (withVectors === 0) return { ok: true, chunks };
  return { ok: true, chunks, vectors: parts.flatMap((p) => (p.ok ? (p.vectors ?? []) : [])) };
}
