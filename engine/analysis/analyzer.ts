// Text analysis for the full-text index: wink-nlp tokenization, lowercasing, accent folding,
// stop-word removal and Porter2 stemming. Index and query go through the same function, so a
// query term always meets the form it was indexed under.
import winkNLP from 'wink-nlp';
import model from 'wink-eng-lite-web-model';
import porter2 from 'wink-porter2-stemmer';
import { ENGLISH_STOP_WORDS } from './stopwords';

/** Bump when analysis output changes: logged term vectors of an older version are re-analyzed. */
export const ANALYZER_VERSION = 1;

// An empty pipe: tokenization only (no POS, NER or sentence detection), about 1.4M tokens/s.
const nlp = winkNLP(model, []);
const its = nlp.its;

// Token kinds that carry no searchable text.
const SKIPPED_TYPES = new Set(['punctuation', 'symbol', 'emoji', 'emoticon', 'tabCRLF']);

const COMBINING_MARKS = /\p{M}+/gu;
const NON_ASCII = /[^\x00-\x7f]/;

/** "Résumé" → "resume"; ligatures such as "ﬁ" become "fi" through NFKD. */
export function foldAccents(word: string): string {
  if (!NON_ASCII.test(word)) return word;
  return word.normalize('NFKD').replace(COMBINING_MARKS, '');
}

// The stemmer is pure and vocabularies are small, so a memo pays for itself many times; it is
// cleared when full so an adversarial stream of unique tokens cannot grow it without bound.
const STEM_MEMO_LIMIT = 200_000;
const stemMemo = new Map<string, string>();

export function stem(word: string): string {
  let s = stemMemo.get(word);
  if (s === undefined) {
    s = porter2(word);
    if (stemMemo.size >= STEM_MEMO_LIMIT) stemMemo.clear();
    stemMemo.set(word, s);
  }
  return s;
}

/** Raw tokens as wink-nlp splits them (kept for tests of the tokenizer patch). */
export function tokenize(text: string): string[] {
  return nlp.readDoc(text).tokens().out();
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

/** Index terms of `text`, in order, duplicates kept (term frequency matters). */
export function analyze(text: string): string[] {
  const out: string[] = [];
  if (text.length === 0) return out;
  // Fold the whole text first: ligatures ("ﬁ") and accents then never split or hide a word.
  const doc = nlp.readDoc(foldAccents(text));
  const normals = doc.tokens().out(its.normal) as string[];
  const types = doc.tokens().out(its.type) as string[];
  for (let i = 0; i < normals.length; i++) {
    if (SKIPPED_TYPES.has(types[i]!)) continue;
    const word = normals[i]!;
    // Compounds ("il-6", "covid-19", "x-ray") are indexed by their parts, as Lucene's standard
    // tokenizer does, so "IL 6" and "IL-6" meet.
    if (HYPHENS.test(word)) {
      for (const part of word.split(HYPHENS)) pushTerm(out, part);
    } else {
      pushTerm(out, word);
    }
  }
  return out;
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
