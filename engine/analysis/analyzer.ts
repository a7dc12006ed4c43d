// Text analysis for the full-text index: wink-nlp tokenization, lowercasing, accent folding,
// stop-word removal and Porter2 stemming. Index and query go through the same function, so a
// query term always meets the form it was indexed under.
//
// Speed: wink-nlp splits a text at spaces first and tokenizes each piece on its own, so the terms
// of a piece depend on the piece alone (see pieceTerms); `analyze` memoizes them per piece.
// Vocabularies repeat, so almost every piece is a hit (bench/fulltext.ts: analysis items/s).
import winkNLP from 'wink-nlp';
import model from 'wink-eng-lite-web-model';
import porter2 from 'wink-porter2-stemmer';
import { ENGLISH_STOP_WORDS } from './stopwords';

/** Bump when analysis output changes: logged term vectors of an older version are re-analyzed. */
export const ANALYZER_VERSION = 1;

// An empty pipe: tokenization only (no POS, NER or sentence detection), about 1.4M tokens/s.
const nlp = winkNLP(model, []);
const its = nlp.its;
// The cache hooks our patch adds to wink-nlp (patches/wink-nlp@2.4.0.patch).
const winkCache = nlp as unknown as { markCache(): unknown; rollbackCache(mark: unknown): void };
const PRISTINE_LEXICON = winkCache.markCache();

// Token kinds that carry no searchable text.
const SKIPPED_TYPES = new Set(['punctuation', 'symbol', 'emoji', 'emoticon', 'tabCRLF']);

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

export function stem(word: string): string {
  let s = stemMemo.get(word);
  if (s === undefined) {
    s = porter2(word);
    stemMemo.set(word, s);
  }
  return s;
}

/** Raw tokens as wink-nlp splits them (kept for tests of the tokenizer patch). */
export function tokenize(text: string): string[] {
  try {
    return nlp.readDoc(text).tokens().out();
  } finally {
    winkCache.rollbackCache(PRISTINE_LEXICON);
  }
}

const HYPHENS = /[-\u2010\u2011\u2012\u2013\u2014]+/;
const MAX_TERM_LENGTH = 64;

const HAS_DIGIT = /[0-9]/;

function pushTerm(out: string[], word: string): void {
  if (word.length === 0 || word.length > MAX_TERM_LENGTH) return;
  if (ENGLISH_STOP_WORDS.has(word)) return;
  // Porter2 is for words: it would turn "3.5" into "y.5" (its y→3 marker is undone on real digits).
  out.push(HAS_DIGIT.test(word) ? word : stem(word));
}

/** Index terms of one wink token, given its normal form and type. */
function pushToken(out: string[], normal: string, type: string): void {
  if (SKIPPED_TYPES.has(type)) return;
  // Compounds ("il-6", "covid-19", "x-ray") are indexed by their parts, as Lucene's standard
  // tokenizer does, so "IL 6" and "IL-6" meet.
  if (HYPHENS.test(normal)) {
    for (const part of normal.split(HYPHENS)) pushTerm(out, part);
  } else {
    pushTerm(out, normal);
  }
}

/**
 * Index terms of one whitespace-separated piece, by wink-nlp against its model's own lexicon:
 * wink keeps every unknown word it meets in a process-wide cache, and a cached word is no longer
 * split ("Huntington's," once seen, "Huntington's" stays whole), so the cache is rolled back after
 * each piece — the terms then depend on the piece alone (not on what the process read before:
 * queries and the documents they meet analyze alike in any thread, before and after a restart)
 * and the cache stops growing.
 */
function pieceTerms(piece: string): string[] {
  const out: string[] = [];
  try {
    const doc = nlp.readDoc(piece);
    const normals = doc.tokens().out(its.normal) as string[];
    const types = doc.tokens().out(its.type) as string[];
    for (let i = 0; i < normals.length; i++) pushToken(out, normals[i]!, types[i]!);
  } finally {
    winkCache.rollbackCache(PRISTINE_LEXICON);
  }
  return out;
}

/** How many entries wink-nlp's lexicon holds now (tests: it must not grow). */
export function winkLexiconSize(): number {
  return (winkCache.markCache() as { extrinsic: number }).extrinsic;
}

// wink-nlp's own splitter (eng-lite-web-model, trex.helpers.splitter): runs of spaces (the first
// group: no token) and runs of tabs and line breaks (one tabCRLF token each). With one group,
// split() alternates piece, separator, piece, … (pieces may be empty).
const WINK_SPLITTER = /([ \u00a0\u2002-\u2005\u2009\u200a\u202f\u205f]+|[\n\r\t]+)/;
const isSpaceRun = (separator: string) => separator[0] !== '\n' && separator[0] !== '\r' && separator[0] !== '\t';

/** The pieces of an already folded text that wink tokenizes, in order. */
function piecesOf(folded: string): string[] {
  const parts = folded.split(WINK_SPLITTER);
  const pieces: string[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part.length > 0 && !(i % 2 === 1 && isSpaceRun(part))) pieces.push(part);
  }
  return pieces;
}

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
  for (const piece of piecesOf(foldAccents(text))) {
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

/** `analyze` without the memo: every piece through wink (the reference the memo must equal). */
export function analyzeUncached(text: string): string[] {
  return text.length === 0 ? [] : piecesOf(foldAccents(text)).flatMap(pieceTerms);
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
