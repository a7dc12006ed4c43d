// Query syntax of full-text search and hybrid's full-text leg, as Meilisearch and Lucene users
// write it: `"money back"` requires the exact phrase, `-refund` (or `-"gift card"`) leaves out
// chunks holding it; everything else is words. A phrase matches when its analyzed terms appear one
// after the other in the chunk's analyzed terms (stop words dropped on both sides, stems compared,
// so `"refund requests"` meets "refunds requested"). Positions are not indexed: the chunks a search
// ranks are checked as they come, deeper until the page is full (refine.ts).
import { analyze, analyzeWords, type AnalyzedWord } from '../analysis/analyzer';
import { EngineError } from '../errors';

export interface ParsedQuery {
  /** Terms that rank: the words' and the phrases', in order. */
  terms: string[];
  /** Phrases a hit must contain, each as its analyzed terms. */
  phrases: string[][];
  /** Terms and phrases a hit must not contain. */
  excluded: string[][];
  /** The query as a model should read it: quotes dropped, exclusions left out. */
  semanticText: string;
  /**
   * Plain words (not of phrases or exclusions), each as typed (lowercased, accents folded) and as its
   * term: those typo tolerance may match loosely, allowing typos by the length of the word as typed.
   */
  words: AnalyzedWord[];
  /** The last word's last term when the query ends right after it (search as you type): it also matches as a prefix. */
  prefix?: string;
}

interface Part {
  text: string;
  phrase: boolean;
  negated: boolean;
}

function parts(query: string): Part[] {
  const out: Part[] = [];
  let i = 0;
  while (i < query.length) {
    while (i < query.length && /\s/.test(query[i]!)) i++;
    if (i >= query.length) break;
    let negated = false;
    // A minus before a letter or a quote; before a digit it is a number (-2, -3.5), before other signs punctuation.
    if (query[i] === '-' && i + 1 < query.length && /[\p{L}"]/u.test(query[i + 1]!)) {
      negated = true;
      i++;
    }
    if (query[i] === '"') {
      const close = query.indexOf('"', i + 1);
      const end = close < 0 ? query.length : close;
      out.push({ text: query.slice(i + 1, end), phrase: true, negated });
      i = end + 1;
    } else {
      let end = i;
      while (end < query.length && !/\s/.test(query[end]!) && query[end] !== '"') end++;
      out.push({ text: query.slice(i, end), phrase: false, negated });
      i = end;
    }
  }
  return out;
}

const invalid = (message: string) => new EngineError('INVALID_QUERY', message, { field: 'query' });

/** The query's words, phrases and exclusions; INVALID_QUERY when its syntax cannot mean anything. */
export function parseQuery(query: string): ParsedQuery {
  const terms: string[] = [];
  const phrases: string[][] = [];
  const excluded: string[][] = [];
  const kept: string[] = [];
  const words: AnalyzedWord[] = [];
  let prefix: string | undefined;
  const all = parts(query);
  for (const part of all) {
    prefix = undefined;
    const typed = part.phrase || part.negated ? undefined : analyzeWords(part.text);
    const analyzed = typed ? typed.map((w) => w.term) : analyze(part.text);
    if (part.negated) {
      if (analyzed.length === 0) throw invalid(`-${part.phrase ? `"${part.text}"` : part.text} excludes only stop words, which are never indexed`);
      excluded.push(analyzed);
      continue;
    }
    kept.push(part.text);
    if (part.phrase) {
      if (analyzed.length === 0 && part.text.trim() !== '') throw invalid(`the phrase "${part.text}" holds only stop words, which are never indexed`);
      if (analyzed.length > 1) phrases.push(analyzed);
    }
    terms.push(...analyzed);
    if (typed) words.push(...typed);
    // Still being typed: the query ends inside this word (no space or punctuation after it).
    prefix = !part.phrase && part === all[all.length - 1] && /[\p{L}\p{N}]$/u.test(query) ? analyzed[analyzed.length - 1] : undefined;
  }
  if (terms.length === 0 && excluded.length > 0) throw invalid('a query of exclusions only has nothing to rank by: add a word or a phrase to look for');
  return { terms, phrases, excluded, semanticText: kept.join(' '), words, ...(prefix !== undefined ? { prefix } : {}) };
}

/** Whether the query asks anything of a hit beyond its terms. */
export const constrains = (q: ParsedQuery) => q.phrases.length > 0 || q.excluded.length > 0;

function containsRun(haystack: readonly string[], run: readonly string[]): boolean {
  if (run.length === 1) return haystack.includes(run[0]!);
  outer: for (let i = 0; i + run.length <= haystack.length; i++) {
    for (let j = 0; j < run.length; j++) if (haystack[i + j] !== run[j]) continue outer;
    return true;
  }
  return false;
}

/** Whether a chunk's text holds every phrase and none of the exclusions. */
export function satisfies(q: ParsedQuery, text: string): boolean {
  const terms = analyze(text);
  return q.phrases.every((p) => containsRun(terms, p)) && !q.excluded.some((e) => containsRun(terms, e));
}
