// bench/semantic.ts, the queries and documents measured: every judged SciFact query over the whole
// corpus, or (--quick) a sample.
import { sampleWorkload } from '../lib/corpus';
import type { CorpusDoc, Query, SciFact } from '../lib/eval-data';
import { quick, SIZES } from './options';

export interface Workload {
  queries: Query[];
  corpus: CorpusDoc[];
}

/** All judged queries and the whole corpus, or (--quick) a spread sample of queries and a corpus
 * holding their relevant documents plus an even spread of the others. */
export function workload(data: SciFact): Workload {
  if (!quick) return { queries: data.queries.filter((q) => data.relevant.has(q.id)), corpus: data.corpus };
  return sampleWorkload(data, SIZES.qualityQueries, { others: SIZES.otherDocs });
}
