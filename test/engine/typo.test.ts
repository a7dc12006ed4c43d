// Typo tolerance and search as you type in the engine: the vocabulary's near terms equal a plain
// Damerau–Levenshtein reference (fast-check), the word-length rule, and the tiered full-text leg
// (exact matches first, scores falling with ranks, typo-only matches after them).
import { expect, test } from 'bun:test';
import fc from 'fast-check';
import { InvertedIndex, isExpanded } from '../../engine/bm25/inverted-index';
import { Vocabulary } from '../../engine/bm25/vocabulary';
import { analyze, analyzeWords, termVector } from '../../engine/analysis/analyzer';
import { expandQuery, matchedTerms, typosAllowed } from '../../engine/search/expansion';
import { FullTextLeg, fullTextCandidates } from '../../engine/search/legs';
import { parseQuery } from '../../engine/search/query-syntax';

/** Optimal string alignment distance, the textbook table. */
function osa(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  return d[a.length]![b.length]!;
}

/** The rule: OSA distance, a first character that differs costing one more. */
function reference(word: string, terms: readonly string[], maxTypos: number): string[] {
  return [...new Set(terms)]
    .filter((t) => t !== word && osa(word, t) + (t[0] !== word[0] ? 1 : 0) <= maxTypos)
    .map((t) => `${t}:${osa(word, t) + (t[0] !== word[0] ? 1 : 0)}`)
    .sort();
}

const vocabularyOf = (terms: string[]) =>
  new Vocabulary(
    () => terms.length,
    (i) => terms[i]!,
  );

test('near terms equal the Damerau–Levenshtein rule, sorted part and unsorted tail alike (fast-check)', () => {
  const word = fc.stringMatching(/^[abcd]{1,9}$/);
  fc.assert(
    fc.property(
      fc.uniqueArray(word, { minLength: 1, maxLength: 300 }),
      fc.uniqueArray(word, { maxLength: 40 }),
      word,
      fc.integer({ min: 1, max: 2 }),
      (first, later, query, k) => {
        const terms = [...first];
        const vocabulary = vocabularyOf(terms);
        const got = () =>
          vocabulary
            .near(query, k)
            .map((n) => `${n.term}:${n.typos}`)
            .sort();
        expect(got()).toEqual(reference(query, terms, k));
        // Terms added after the vocabulary was sorted (the tail), without duplicates as an index has none.
        for (const t of later) if (!terms.includes(t)) terms.push(t);
        expect(got()).toEqual(reference(query, terms, k));
      },
    ),
    { numRuns: 300 },
  );
});

test('a typo on the first character counts as two; swaps count as one', () => {
  const vocabulary = vocabularyOf(['phone', 'shone', 'phnoe', 'hpone', 'phones', 'phoneme', 'telephone']);
  expect(
    vocabulary
      .near('phone', 1)
      .map((n) => n.term)
      .sort(),
  ).toEqual(['phnoe', 'phones']);
  expect(
    vocabulary
      .near('phone', 2)
      .map((n) => `${n.term}:${n.typos}`)
      .sort(),
  ).toEqual(['hpone:2', 'phnoe:1', 'phoneme:2', 'phones:1', 'shone:2']);
  expect(vocabularyOf(['refund', 'refunds', 'rebound']).startingWith('ref')).toEqual(['refund', 'refunds']);
});

test("Meilisearch's word-length rule, on the word as typed, each typo needing 4 characters of its term; numbers match exactly", () => {
  expect([typosAllowed('seven'), typosAllowed('two'), typosAllowed('four'), typosAllowed('inflammat'), typosAllowed('12345')]).toEqual([1, 0, 0, 2, 0]);
  // The typed word's length decides, not its stem's: "hoyses" (6) allows one typo though "hoys" has 4 characters.
  expect(typosAllowed('hoyses', 'hoys')).toBe(1);
  expect(typosAllowed('hoyse', 'hoys')).toBe(1);
  expect(typosAllowed('hoys', 'hoys')).toBe(0);
  expect(typosAllowed('inflammation', 'inflamm')).toBe(1);
  expect(typosAllowed('transplantation', 'transplant')).toBe(2);
  // A stem too short to hold the typos: two in "abil" (of "abilities") would match "all", "acid", "aim".
  expect(typosAllowed('abilities', 'abil')).toBe(1);
  expect(typosAllowed('ties', 'ti')).toBe(0);
  expect(typosAllowed('covid19s', 'covid19')).toBe(0);
});

test('query words carry their form as typed (lowercased, accents folded, possessive off) beside their term', () => {
  expect(parseQuery('The HOYSES of Zoë\'s café "paymnet terms" -refnud pol').words).toEqual([
    { word: 'hoyses', term: 'hoys' },
    { word: 'zoe', term: 'zoe' },
    { word: 'cafe', term: 'cafe' },
    { word: 'pol', term: 'pol' },
  ]);
  // The terms are the analyzer's, word for word (fast-check).
  fc.assert(
    fc.property(fc.string({ maxLength: 60 }), (text) => {
      expect(analyzeWords(text).map((w) => w.term)).toEqual(analyze(text));
    }),
    { numRuns: 500 },
  );
});

function indexOf(texts: string[]): InvertedIndex {
  const index = new InvertedIndex();
  texts.forEach((t, doc) => index.add(doc, termVector(t)));
  return index;
}

test('expansions: typos of the words, completions of the last word while it is being typed; none when off', () => {
  const index = indexOf(['Refund policy for damaged goods', 'The refund desk', 'Policies change yearly', 'Police reports', 'Payment methods']);
  const q = expandQuery(index, parseQuery('refnud poli'));
  expect(isExpanded(q)).toBe(true);
  expect(matchedTerms(q).sort()).toEqual(['polic', 'polici', 'poli', 'refnud', 'refund'].sort());
  // A finished last word (followed by a space or punctuation) is no prefix.
  expect(matchedTerms(expandQuery(index, parseQuery('refnud poli ')))).toEqual(['refnud', 'poli', 'refund']);
  expect(expandQuery(index, parseQuery('refnud poli'), false)).toEqual(['refnud', 'poli']);
  // Words inside phrases and exclusions are exact.
  expect(matchedTerms(expandQuery(index, parseQuery('"refnud desk" -paymnt ')))).toEqual(['refnud', 'desk']);
});

test('inflected words with a typo: the allowance by the word as typed, the match by its stem', () => {
  const index = indexOf([
    'The houses on our street were painted blue', // 0: "houses" → hous
    'Hospitals treat patients', // 1: hospit
    'Policies change yearly', // 2: polici
    'The hoes are in the shed', // 3: hoe
    'All abilities count', // 4: all, abil, count
    'An acid test', // 5: acid
    'Running shoes for development teams', // 6: run, shoe, develop, team
  ]);
  const found = (query: string, typoTolerance = true) => fullTextCandidates(index, expandQuery(index, parseQuery(query), typoTolerance), 20).map((h) => h.doc);
  // "hoyses" (6 characters: one typo) → "hoys", one typo from "hous"; the term's 4 characters alone allowed none.
  expect(found('hoyses ')).toEqual([0]);
  expect(found('hosues ')).toEqual([0]); // swapped: "hosu"
  expect(found('Hoyses')).toEqual([0]); // the last word, as typed: a typo and a prefix
  expect(found('hoyses ', false)).toEqual([]);
  expect(found('hopsitals ')).toEqual([1]); // "hopsit" → "hospit"
  expect(found('poilcies ')).toEqual([2]); // "poilci" → "polici"
  // Typed words under 5 characters stay exact whatever their stem.
  expect(found('hoys ')).toEqual([]);
  expect(found('hospitls ')).toEqual([1]); // "hospitl": a deletion from "hospit"
  // A typo that keeps the stemmer from taking the suffix off leaves the term far from the right one: not found.
  expect(found('runnign ')).toEqual([]); // "runnign", 4 from "run"
  expect(found('developmetn ')).toEqual([]); // "developmetn", 4 from "develop"
  expect(found('running development ')).toEqual([6]);
  // "abilities" → "abil" (4 characters): one typo, not the two its 9 letters would allow ("all", "acid").
  const abilities = expandQuery(index, parseQuery('abilities '));
  expect(matchedTerms(abilities)).not.toContain('acid');
  expect(found('abilities ')).toEqual([4]);
  // The chunk holding the word as typed ranks above the one matched through the typo.
  const both = indexOf(['The houses stand', 'The hoyses stand']);
  const ranked = fullTextCandidates(both, expandQuery(both, parseQuery('hoyses ')), 20);
  expect(ranked.map((h) => h.doc)).toEqual([1, 0]);
  expect(ranked[1]!.score).toBeLessThan(ranked[0]!.score);
  // Two forms of one term: the longer one's allowance counts ("hoyse" and "hoyses" are both "hoys").
  expect(matchedTerms(expandQuery(index, parseQuery('hoys hoyses ')))).toContain('hous');
});

test('tiers: exact matches first, then typo-only matches with scores below them, in the order of their own', () => {
  const index = indexOf([
    'payment terms and conditions', // 0: exact
    'paymnet paymnet paymnet', // 1: a typo, three times in a short chunk: its own BM25 is the highest
    'late payment fees apply to every payment', // 2: exact
    'the paymet portal', // 3: a typo
    'nothing relevant here', // 4
    'paymnet or paymet on the invoice portal page', // 5: typos, so that each is as common as the word (a rarer one is no match)
  ]);
  const query = expandQuery(index, parseQuery('payment '));
  const ranked = fullTextCandidates(index, query, 20);
  expect(
    ranked
      .map((h) => h.doc)
      .slice(0, 2)
      .sort(),
  ).toEqual([0, 2]);
  expect(
    ranked
      .map((h) => h.doc)
      .slice(2)
      .sort(),
  ).toEqual([1, 3, 5]);
  for (let i = 1; i < ranked.length; i++) expect(ranked[i]!.score).toBeLessThan(ranked[i - 1]!.score);
  // Without tolerance, the exact ones alone, with the same scores.
  const exact = fullTextCandidates(index, analyze('payment'), 20);
  expect(exact).toEqual(ranked.slice(0, 2));
  // A misspelled query finds the word and the same misspelling (exact) first.
  const typo = fullTextCandidates(index, expandQuery(index, parseQuery('paymnet ')), 20);
  expect(typo[0]!.doc).toBe(1);
  expect(new Set(typo.map((h) => h.doc))).toEqual(new Set([0, 1, 2, 3, 5]));
});

test('a typo match is kept only when at least as many items hold it as hold the word as typed', () => {
  const index = indexOf(['the houses stand', 'houses for sale', 'old houses', 'the hoyses stand', 'a late train', 'later that day', 'later again']);
  const terms = (q: string) => matchedTerms(expandQuery(index, parseQuery(q)));
  // A word three items hold is not diluted by its rarer neighbour, nor "later" (2) by "late" (1).
  expect(terms('houses ')).toEqual(['hous']);
  expect(terms('later ')).toEqual(['later']);
  // The misspelling one item holds still finds the commoner word; a word no item holds keeps every match.
  expect(terms('hoyses ')).toEqual(['hoys', 'hous']);
  expect(terms('hoises ')).toEqual(['hois', 'hous', 'hoys']);
  // Equally common: both spellings stay matches of each other.
  const even = indexOf(['payment due', 'paymnet due']);
  expect(matchedTerms(expandQuery(even, parseQuery('payment ')))).toEqual(['payment', 'paymnet']);
});

test('the leg scores any chunk by the same tiers (hybrid scores the semantic leg candidates so)', () => {
  const index = indexOf(['payment terms', 'paymnet paymnet paymnet', 'late payment fees', 'the paymet portal', 'nothing here', 'paymnet or paymet']);
  const query = expandQuery(index, parseQuery('payment '));
  // Depth 1: the first tier fills the candidates; the others are scored below its lowest.
  const leg = new FullTextLeg(index, query, 1);
  const lowest = leg.candidates[0]!.score;
  const [typoOnly, other, none] = leg.scoresOf([1, 2, 4]);
  expect(typoOnly).toBeGreaterThan(0);
  expect(typoOnly).toBeLessThan(lowest);
  expect(other).toBeGreaterThan(0); // exact: its own score, whatever the depth
  expect(none).toBe(0);
  // Deep enough, the candidates carry the same scores scoresOf gives.
  const deep = new FullTextLeg(index, query, 20);
  const docs = deep.candidates.map((h) => h.doc);
  expect(new FullTextLeg(index, query, 20).scoresOf(docs)).toEqual(deep.candidates.map((h) => h.score));
});

test("a chunk holding several expansions of one word scores by the best of them; different words' add up", () => {
  const index = indexOf(['payment', 'paymnet', 'paymnet paymet', 'paymnet refnud', 'paymnet paymet refnud refudn']);
  const typos = (word: string, terms: string[]) => terms.map((term) => ({ term, boost: 0.5, groupFreq: 1, word }));
  const query = { terms: ['payment'], expansions: [...typos('payment', ['paymnet', 'paymet']), ...typos('refund', ['refnud', 'refudn'])] };
  const [, one, twoOfOne, twoWords, fourOfTwo] = index.scoreDocs(query, [0, 1, 2, 3, 4]);
  const alone = (term: string, doc: number) => index.scoreDocs({ terms: [], expansions: query.expansions.filter((e) => e.term === term) }, [doc])[0]!;
  expect(one).toBeGreaterThan(0);
  expect(twoOfOne).toBe(Math.max(alone('paymnet', 2), alone('paymet', 2)));
  expect(twoWords).toBeCloseTo(alone('paymnet', 3) + alone('refnud', 3), 12);
  expect(fourOfTwo).toBeCloseTo(Math.max(alone('paymnet', 4), alone('paymet', 4)) + Math.max(alone('refnud', 4), alone('refudn', 4)), 12);
  // The same by explain, and by the most a chunk could score.
  expect(index.explain(query, 4)!.score).toBe(fourOfTwo!);
  expect(index.scoreBound(query)).toBeLessThan(index.scoreBound({ ...query, expansions: query.expansions.map(({ word: _, ...e }) => e) }));
  // Without words, each expansion adds on its own, as before.
  const loose = { ...query, expansions: query.expansions.map(({ word: _, ...e }) => e) };
  expect(index.scoreDocs(loose, [2])[0]).toBeCloseTo(alone('paymnet', 2) + alone('paymet', 2), 12);
});

test('MaxScore with expansions equals exhaustive scoring: hits hold a query term, expansions add to them (fast-check)', () => {
  const words = ['alpha', 'alpho', 'beta', 'betta', 'gamma', 'gamme', 'delta', 'omega'];
  const doc = fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 12 });
  fc.assert(
    fc.property(
      fc.array(doc, { minLength: 1, maxLength: 60 }),
      fc.uniqueArray(fc.constantFrom(...words), { minLength: 1, maxLength: 3 }),
      fc.uniqueArray(
        fc.record(
          {
            term: fc.constantFrom(...words),
            boost: fc.constantFrom(0.25, 0.5),
            groupFreq: fc.integer({ min: 1, max: 10 }),
            // Expansions of one word count by their best; without a word, each on its own.
            word: fc.constantFrom('alpha', 'beta'),
          },
          { requiredKeys: ['term', 'boost', 'groupFreq'] },
        ),
        { selector: (e) => e.term, maxLength: 5 },
      ),
      fc.integer({ min: 1, max: 15 }),
      (docs, terms, expansions, k) => {
        const index = new InvertedIndex();
        docs.forEach((words, d) => index.add(d, termVector(words.join(' '))));
        // An expansion weighs with the idf of a word the index holds: never more items than it has.
        const query = { terms, expansions: expansions.map((e) => ({ ...e, groupFreq: Math.min(e.groupFreq, docs.length) })) };
        const all = docs.map((_, d) => d);
        const scores = index.scoreDocs(query, all);
        const exact = index.scoreDocs(terms, all);
        const anyExact = exact.some((s) => s > 0);
        const expected = all
          .filter((d) => (anyExact ? exact[d]! > 0 : scores[d]! > 0))
          .map((d) => ({ doc: d, score: scores[d]! }))
          .sort((a, b) => b.score - a.score || a.doc - b.doc)
          .slice(0, k);
        expect(index.search(query, k)).toEqual(expected);
      },
    ),
    { numRuns: 300 },
  );
});
