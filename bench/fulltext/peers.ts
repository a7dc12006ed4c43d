// bench/fulltext.ts, the peers: Orama and MiniSearch on the same documents, in the same process.
import { create, insertMultiple, search as oramaSearch } from '@orama/orama';
import MiniSearch from 'minisearch';
import type { CorpusDoc } from '../lib/eval-data';
import { summarize, timeEach } from '../lib/stats';
import { measureBuild } from './engine-index';
import { LATENCY_K, MINISEARCH_TIMED_QUERIES, ORAMA_TIMED_QUERIES, PEER_WARMUP_QUERIES } from './options';

/** A peer's index as a function from query to ranked item ids. */
type PeerSearch = (query: string, limit: number) => string[];

export interface Peer {
  name: string;
  timedQueries: number;
  build: (items: readonly CorpusDoc[]) => Promise<PeerSearch>;
}

export const PEERS: Peer[] = [
  {
    name: 'Orama 3.1.18',
    timedQueries: ORAMA_TIMED_QUERIES,
    build: async (items) => {
      const db = create({ schema: { text: 'string' } as const });
      await insertMultiple(
        db,
        items.map((d) => ({ id: d.id, text: d.text })),
      );
      return (term, limit) => {
        const result = oramaSearch(db, { term, limit });
        // Without async plugins or hooks Orama answers synchronously; timing relies on that.
        if (result instanceof Promise) throw new Error('Orama answered asynchronously');
        return result.hits.map((h) => h.id);
      };
    },
  },
  {
    name: 'MiniSearch 7.2.0',
    timedQueries: MINISEARCH_TIMED_QUERIES,
    build: async (items) => {
      const index = new MiniSearch<CorpusDoc>({ fields: ['text'] });
      index.addAll(items);
      return (query, limit) =>
        index
          .search(query)
          .slice(0, limit)
          .map((r) => String(r.id));
    },
  },
];

// Each index is built inside its own call and only numbers come out: a finished async call frees
// its locals, while a loop variable in a long-lived async function can keep the last index alive
// past the next "before" snapshot and skew the memory figures.

export async function measurePeer(peer: Peer, items: readonly CorpusDoc[], sample: readonly string[]) {
  const built = await measureBuild(() => peer.build(items));
  const run = (q: string) => built.value(q, LATENCY_K);
  timeEach(sample.slice(0, PEER_WARMUP_QUERIES), 1, run);
  return {
    name: peer.name,
    buildMs: built.ms,
    heapBytesPerItem: built.heapBytes / items.length,
    timedQueries: sample.length,
    latency: summarize(timeEach(sample, 1, run)),
  };
}
