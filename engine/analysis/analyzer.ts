// Text analysis for the full-text index, Lucene's EnglishAnalyzer step for step: words as Unicode
// word boundaries (UAX #29) find them, possessive "'s" removed, lowercased, Lucene's 33 English
// stop words dropped, then Porter's original stemmer (porter.ts). One addition: accents and
// ligatures are folded first ("résumé" meets "resume"). Index and query go through the same
// function, so a query term always meets the form it was indexed under.
//
// Words come from ICU's word segmenter (Intl.Segmenter, the UAX #29 rules Lucene's
// StandardTokenizer implements): letters and digits with the joiners between them stay one word
// ("3.5", "don't", "p53"), hyphens, slashes and brackets separate ("IL-6" → "il", "6").
//
// Speed: a word boundary always falls at whitespace, so a text is split at whitespace first and
// each piece analyzed on its own; `analyze` memoizes the terms of each piece. Vocabularies repeat,
// so almost every piece is a hit (bench/fulltext.ts: analysis items/s).
import { porterStem } from './porter';
import { ENGLISH_STOP_WORDS } from './stopwords';

/** Bump when analysis output changes: logged term vectors of an older version are re-analyzed. */
export const ANALYZER_VERSION = 2;

const words = new Intl.Segmenter('en', { granularity: 'word' });

const COMBINING_MARKS = /\p{M}+/gu;
const NON_ASCII = /[^\x00-\x7f]/;

/** "Résumé" → "resume"; ligatures such as "ﬁ" become "fi" through NFKD. */
export function foldAccents(word: string): string {
  if (!NON_ASCII.test(word)) return word;
  return word.normalize('NFKD').replace(COMBINING_MARKS, '');
}

/**
 * A memo that is cleared when full, so an adversarial stream of unique inputs cannot grow it
 * without bound (vocabularies are small: a clear is rare and only costs recomputation).
 */
class BoundedMemo<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly limit: number) {}
  get(key: string): V | undefined {
    return this.map.get(key);
  }
  set(key: string, value: V): void {
    if (this.map.size >= this.limit) this.map.clear();
    this.map.set(key, value);
  }
}

const stemMemo = new BoundedMemo<string>(200_000);

/** Porter's original stemmer, memoized. */
export function stem(word: string): string {
  let s = stemMemo.get(word);
  if (s === undefined) {
    s = porterStem(word);
    stemMemo.set(word, s);
  }
  return s;
}

/** Words as the word segmenter finds them, before any filter (for tests). */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  for (const s of words.segment(text)) if (s.isWordLike) out.push(s.segment);
  return out;
}

// Lucene's EnglishPossessiveFilter: a word ending in 's after an apostrophe, a right single
// quotation mark or a fullwidth apostrophe loses both.
const APOSTROPHES = new Set(["'", '\u2019', '\uff07']);
const MAX_TERM_LENGTH = 64;

/** A segment as the word it is indexed under before stemming (lowercased, possessive removed), or undefined when it is not indexed. */
function indexedWord(segment: string): string | undefined {
  let word = segment.toLowerCase();
  if (word.length >= 2 && word.endsWith('s') && APOSTROPHES.has(word[word.length - 2]!)) word = word.slice(0, -2);
  if (word.length === 0 || word.length > MAX_TERM_LENGTH || ENGLISH_STOP_WORDS.has(word)) return undefined;
  return word;
}

/** Index terms of one whitespace-free piece of folded text, in order. */
function pieceTerms(piece: string): string[] {
  const out: string[] = [];
  for (const s of words.segment(piece)) {
    if (!s.isWordLike) continue;
    const word = indexedWord(s.segment);
    if (word !== undefined) out.push(stem(word));
  }
  return out;
}

// Whitespace that is always a word boundary (UAX #29 breaks on both sides of it). U+FEFF, a format
// character that words are joined across, is not among it.
const WHITESPACE = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/;

// Most pieces give one term or none: those are kept as the term itself or as one shared empty
// list, which keeps the memo small (~80 bytes a piece).
type PieceTerms = string | readonly string[];
const NO_TERMS: readonly string[] = [];
const pieceMemo = new BoundedMemo<PieceTerms>(200_000);

function compact(terms: string[]): PieceTerms {
  return terms.length === 0 ? NO_TERMS : terms.length === 1 ? terms[0]! : terms;
}

/** Index terms of `text`, in order, duplicates kept (term frequency matters). */
export function analyze(text: string): string[] {
  const out: string[] = [];
  if (text.length === 0) return out;
  // Fold the whole text first: ligatures ("ﬁ") and accents then never split or hide a word.
  for (const piece of foldAccents(text).split(WHITESPACE)) {
    if (piece.length === 0) continue;
    let terms = pieceMemo.get(piece);
    if (terms === undefined) {
      terms = compact(pieceTerms(piece));
      pieceMemo.set(piece, terms);
    }
    if (typeof terms === 'string') out.push(terms);
    else for (let k = 0; k < terms.length; k++) out.push(terms[k]!);
  }
  return out;
}

/** An indexed word of a text: as written (folded, lowercased, possessive removed) and its term (the stem). */
export interface AnalyzedWord {
  word: string;
  term: string;
}

/**
 * The terms of `text` with the words they came from: the terms equal `analyze(text)`. For query
 * words, whose typo allowance goes by the word as typed (typo tolerance, search/expansion.ts).
 */
export function analyzeWords(text: string): AnalyzedWord[] {
  const out: AnalyzedWord[] = [];
  if (text.length === 0) return out;
  for (const piece of foldAccents(text).split(WHITESPACE)) {
    if (piece.length === 0) continue;
    for (const s of words.segment(piece)) {
      if (!s.isWordLike) continue;
      const word = indexedWord(s.segment);
      if (word !== undefined) out.push({ word, term: stem(word) });
    }
  }
  return out;
}

/** `analyze` without the memo, segmenting the whole text at once (the reference the memo must equal). */
export function analyzeUncached(text: string): string[] {
  return text.length === 0 ? [] : pieceTerms(foldAccents(text));
}

/** Term → frequency, plus the document length (number of indexed terms). */
export interface TermVector {
  terms: string[];
  tfs: number[];
  length: number;
}

export function termVector(text: string): TermVector {
  const all = analyze(text);
  const counts = new Map<string, number>();
  for (const t of all) counts.set(t, (counts.get(t) ?? 0) + 1);
  return { terms: [...counts.keys()], tfs: [...counts.values()], length: all.length };
}
