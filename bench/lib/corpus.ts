// The documents and queries the benchmarks run on: SciFact train (or a generated stand-in),
// samples of it for --quick runs, and replicas of it for larger sizes.
import { spread } from './stats';
import { loadSciFact, type CorpusDoc, type Query, type SciFact } from './eval-data';

/** SciFact train when present; otherwise a generated corpus (latency only: no judgments). */
export async function loadCorpus(): Promise<{ data: SciFact; generated: boolean }> {
  const data = await loadSciFact();
  if (data) return { data, generated: false };
  // Zipf-like vocabulary of made-up words, 1,000-character documents, 5-word queries.
  let seed = 12345;
  const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
  const vocab = Array.from({ length: 20_000 }, (_, i) => `w${i.toString(36)}x`);
  const word = () => vocab[Math.floor(vocab.length * random() ** 3)]!;
  const sentence = (n: number) => Array.from({ length: n }, word).join(' ');
  const corpus = Array.from({ length: 5000 }, (_, i) => ({
    id: `g${i}`,
    text: `${sentence(8)}\n\n${Array.from({ length: 8 }, () => `${sentence(20)}.`).join(' ')}`,
  }));
  const queries = Array.from({ length: 500 }, (_, i) => ({ id: `q${i}`, text: sentence(5) }));
  return { data: { dir: '(generated)', corpus, queries, relevant: new Map() }, generated: true };
}

/**
 * A spread sample of `queryCount` judged queries and a corpus of their relevant documents plus an
 * even spread of the others: either up to `documents` in all, or `others` more.
 */
export function sampleWorkload(data: SciFact, queryCount: number, size: { documents: number } | { others: number }): { queries: Query[]; corpus: CorpusDoc[] } {
  const judged = data.queries.filter((q) => data.relevant.has(q.id));
  const queries = spread(judged.length ? judged : data.queries, queryCount);
  const needed = new Set(queries.flatMap((q) => [...(data.relevant.get(q.id) ?? [])]));
  const othersCount = 'others' in size ? size.others : Math.max(0, size.documents - needed.size);
  const others = spread(
    data.corpus.filter((d) => !needed.has(d.id)),
    othersCount,
  );
  const keep = new Set([...needed, ...others.map((d) => d.id)]);
  return { queries, corpus: data.corpus.filter((d) => keep.has(d.id)) };
}

/**
 * `count` items of the corpus repeated; copy k ≥ 1 of a document ends with a marker word
 * (" rep<k>"), so every item's text is distinct and a text-derived embedding of a copy is a near
 * duplicate of its original, not an identical vector. The marker never occurs in a query.
 */
export function replicaTexts(corpus: readonly CorpusDoc[], count: number): { id: string; text: string; source: string }[] {
  return Array.from({ length: count }, (_, i) => replicaText(corpus, i));
}

/** Item `i` of replicaTexts, made alone (a million items need not be held at once). */
export function replicaText(corpus: readonly CorpusDoc[], i: number): { id: string; text: string; source: string } {
  const doc = corpus[i % corpus.length]!;
  const copy = Math.floor(i / corpus.length);
  return { id: copy === 0 ? doc.id : `${doc.id}#${copy}`, source: doc.id, text: copy === 0 ? doc.text : `${doc.text} rep${copy}` };
}
