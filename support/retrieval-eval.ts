// SciFact (BEIR format), loaded for the benchmarks and for tests that check the analyzer on real
// text. The data set stays outside the repository (its licence is non-commercial); it is read at
// run time from SCIFACT_DIR or ../shared/eval/scifact-train.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

const REPO_ROOT = resolve(import.meta.dir, '..');

export interface CorpusDoc {
  id: string;
  /** Title and abstract as one text, the way the benchmarks index it. */
  text: string;
}

export interface Query {
  id: string;
  text: string;
}

export interface SciFact {
  dir: string;
  corpus: CorpusDoc[];
  queries: Query[];
  /** Query id → ids of the documents judged relevant (qrels score > 0). */
  relevant: Map<string, Set<string>>;
}

export function scifactDir(): string {
  return process.env.SCIFACT_DIR ?? join(REPO_ROOT, '..', 'shared', 'eval', 'scifact-train');
}

async function readJsonl<T>(path: string): Promise<T[]> {
  const text = await Bun.file(path).text();
  return text
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .map((line) => JSON.parse(line) as T);
}

/** The training split, or undefined when the files are not there (benchmarks then skip). */
export async function loadSciFact(dir = scifactDir()): Promise<SciFact | undefined> {
  const qrelsPath = join(dir, 'qrels', 'train.tsv');
  if (![join(dir, 'corpus.jsonl'), join(dir, 'queries.jsonl'), qrelsPath].every((p) => existsSync(p))) return undefined;

  const corpus = (await readJsonl<{ _id: string; title: string; text: string }>(join(dir, 'corpus.jsonl'))).map(
    (d): CorpusDoc => ({ id: String(d._id), text: `${d.title}\n\n${d.text}` }),
  );
  const queries = (await readJsonl<{ _id: string; text: string }>(join(dir, 'queries.jsonl'))).map((q): Query => ({ id: String(q._id), text: q.text }));

  const relevant = new Map<string, Set<string>>();
  for (const line of (await Bun.file(qrelsPath).text()).split('\n')) {
    const [queryId, docId, score] = line.trim().split('\t');
    // Skips the `query-id corpus-id score` header and blank lines: the score is not a number.
    if (!queryId || !docId || !(Number(score) > 0)) continue;
    let set = relevant.get(queryId);
    if (!set) relevant.set(queryId, (set = new Set()));
    set.add(docId);
  }
  return { dir, corpus, queries, relevant };
}
