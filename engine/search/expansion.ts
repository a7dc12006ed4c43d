// Typo tolerance and search as you type: the terms of the index a query word may stand for, as
// Meilisearch users know it. A word of 5 or more characters as typed allows one typo, of 9 or more
// two (a missing, extra, wrong or swapped character is a typo; one on the first character counts
// as two); words holding a digit match exactly (numbers and codes are not misspelled words). The
// allowance goes by the word as the user typed it, the matching by its term (its stem: the form
// the index holds) against the index's terms: "hoyses" (6 characters, one typo) has the term
// "hoys", one typo from "hous", the term of "houses". Each typo needs 4 characters of the term:
// Porter's stems can be much shorter than their words ("abilities" → "abil", "regenerative" →
// "regen"), and two typos in four letters match almost anything ("abil" would match "all", "acid"
// and "aim": SciFact's queries gained nothing by such matches, their highlights marked those
// words, and their search took twice as long, bench/typo.ts). A typo that keeps the stemmer from taking a suffix off ("developmetn" stays
// whole, "development" is "develop") leaves the term further from the right one than the typo
// itself, and is found only when the allowance covers that distance. The last word, while the
// query ends inside it, also matches every term it begins.
//
// An expansion weighs a share of its word (half for one typo or a completion, a quarter for two
// typos) with the word's own idf; a chunk holding several expansions of one word scores by the best
// of them (a word is matched by one spelling, as in Meilisearch), and an expansion never brings a
// hit on its own while a query word occurs exactly somewhere: hits are the chunks holding an exact word, their scores raised by the
// expansions they hold; chunks matched only through expansions rank after them (legs.ts).
//
// A typo match is kept only when at least as many items hold it as hold the word as typed: a typo
// is corrected toward the commoner spelling (as a spelling corrector weighs its candidates by how
// common they are), so a word the index holds is not diluted by its rarer neighbours ("later" no
// longer matches "late"), a misspelling a few items hold still matches the commoner word, and a
// word no item holds keeps every match. SciFact train (bench/typo.ts): nDCG@10 as written 0.7006 → 0.7023, with one typo
// in each query 0.6876 → 0.6865; full-text p99 at 1M chunks 20.6 → 9.2 ms (expansions of correctly
// spelled words weighed on every candidate, README "Typo tolerance").
import { isExpanded, type Bm25Query, type InvertedIndex, type TermExpansion } from '../bm25/inverted-index';
import type { KnowledgeBase } from '../kb/knowledge-base';
import { kbItems, syncItems } from './items';
import { parseQuery, type ParsedQuery } from './query-syntax';

/** Meilisearch's minWordSizeForTypos defaults, on the word as typed. */
export const ONE_TYPO_FROM = 5;
export const TWO_TYPOS_FROM = 9;
/** Characters of the term (the stem) each typo needs. */
export const TERM_CHARS_PER_TYPO = 4;
/** The share of its word's weight an expansion carries. */
const BOOST_BY_TYPOS = [1, 0.5, 0.25];
const COMPLETION_BOOST = 0.5;
/** Expansions kept per word: the nearest, then the most common (a bound on the search's work). */
const MAX_TYPO_TERMS = 16;
const MAX_COMPLETIONS = 24;

/**
 * Typos a word allows: by its length as typed (not its stem's: "hoyses" is 6 characters, one typo,
 * though its term "hoys" is 4), as many as its term holds 4 characters for.
 */
export function typosAllowed(typed: string, term = typed): number {
  if (/\d/.test(typed)) return 0;
  const byLength = typed.length >= TWO_TYPOS_FROM ? 2 : typed.length >= ONE_TYPO_FROM ? 1 : 0;
  return Math.min(byLength, Math.floor(term.length / TERM_CHARS_PER_TYPO));
}

/** The query's terms with the expansions of its words (none when typo tolerance is off). */
export function expandQuery(index: InvertedIndex, q: Pick<ParsedQuery, 'terms' | 'words' | 'prefix'>, typoTolerance = true): Bm25Query {
  if (!typoTolerance || (q.words.length === 0 && q.prefix === undefined)) return q.terms;
  const vocabulary = index.vocabulary;
  const expansions: TermExpansion[] = [];
  // One word's expansions share the word's idf: its own when it occurs, else the commonest of them.
  const add = (word: string, found: { term: string; boost: number; groupFreq: number }[], max: number) => {
    const live = found.filter((f) => f.groupFreq > 0);
    live.sort((a, b) => b.boost - a.boost || b.groupFreq - a.groupFreq || (a.term < b.term ? -1 : 1));
    const kept = live.slice(0, max);
    const own = index.groupFreqOf(word);
    const groupFreq = own > 0 ? own : Math.max(0, ...kept.map((f) => f.groupFreq));
    // Of one word's expansions a chunk holding several counts the best (TermExpansion.word).
    for (const f of kept) expansions.push({ term: f.term, boost: f.boost, groupFreq, word });
  };
  // A term typed as several words ("house houses") allows the most typos any of them does.
  const allowed = new Map<string, number>();
  for (const { word, term } of q.words) allowed.set(term, Math.max(allowed.get(term) ?? 0, typosAllowed(word, term)));
  for (const [term, typos] of allowed) {
    if (typos === 0) continue;
    const asTyped = index.groupFreqOf(term);
    add(
      term,
      vocabulary
        .near(term, typos)
        .map((n) => ({ term: n.term, boost: BOOST_BY_TYPOS[n.typos]!, groupFreq: index.groupFreqOf(n.term) }))
        .filter((f) => f.groupFreq >= asTyped),
      MAX_TYPO_TERMS,
    );
  }
  if (q.prefix !== undefined) {
    add(
      q.prefix,
      vocabulary.startingWith(q.prefix).map((term) => ({ term, boost: COMPLETION_BOOST, groupFreq: index.groupFreqOf(term) })),
      MAX_COMPLETIONS,
    );
  }
  return expansions.length === 0 ? q.terms : { terms: q.terms, expansions };
}

/** A knowledge base's full-text query for a parsed query, against its index as it is now. */
export function kbQuery(kb: KnowledgeBase, q: ParsedQuery, typoTolerance = true): Bm25Query {
  // Expansions weigh by content items: the index must know them first.
  syncItems(kb.bm25, kbItems(kb));
  return expandQuery(kb.bm25, q, typoTolerance);
}

/** The full-text query the endpoints rank by for `text` (benchmarks rank by it too). */
export const fullTextQuery = (kb: KnowledgeBase, text: string, typoTolerance = true): Bm25Query => kbQuery(kb, parseQuery(text), typoTolerance);

/** Every term a hit may have matched by: the query's and its expansions' (for highlights). */
export function matchedTerms(query: Bm25Query): string[] {
  return isExpanded(query) ? [...query.terms, ...query.expansions.map((e) => e.term)] : [...query];
}
