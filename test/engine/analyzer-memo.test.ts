// The analyzer's per-piece memo (engine/analysis/analyzer.ts): wink-nlp tokenizes each
// whitespace-separated piece against its model's own lexicon (its process-wide cache rolled back
// after each piece), so terms depend on the text alone, and a memo of piece → terms gives the same
// terms as tokenizing every piece afresh. Checked on SciFact (../shared/eval, present in CI) and on
// random texts built from the characters that steer wink's tokenizer.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { analyze, analyzeUncached, winkLexiconSize } from '../../engine/analysis/analyzer';
import { loadSciFact } from '../../bench/lib/eval-data';

describe('analysis depends on the text alone', () => {
  test('a piece wink once kept whole stays split: what the process read before changes nothing', () => {
    // Before the rollback, reading "Huntington's," put "Huntington's" into wink's cache, and from
    // then on "Huntington's disease" lost its "'s" token.
    const query = "feature of Huntington's disease";
    const before = analyze(query);
    expect(before).toEqual(['featur', 'huntington', "'s", 'diseas']);
    analyze("myotonic dystrophy, Huntington's, etc.) and even some forms of");
    expect(analyze(query)).toEqual(before);
    expect(analyzeUncached(query)).toEqual(before);
  });

  test("wink's lexicon does not grow with the words it meets", () => {
    const size = winkLexiconSize();
    const unique = Array.from({ length: 5000 }, (_, i) => `zq${i.toString(36)}x-${i}y's,`).join(' ');
    expect(analyze(unique).length).toBeGreaterThan(5000);
    expect(winkLexiconSize()).toBe(size);
  });

  test('pieces split as wink splits them: spaces, no-break spaces, tabs and line breaks', () => {
    expect(analyze('alpha\tbeta\ngamma\u00a0delta\u2009epsilon\r\n\r\nzeta  eta')).toEqual(['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta']);
  });
});

describe('the memo gives the terms of tokenizing every piece afresh', () => {
  test('random texts of words, numbers, hyphens, apostrophes, periods and brackets', () => {
    const token = fc.constantFrom(
      'cell', 'Cells', "cell's", "Huntington's", 'IL-6', 'il', '6', 'covid-19', 'e.g.', 'U.S.', 'Dr.', "can't", 'cannot', 'gonna',
      '3.5', '1,000', '(p<0.05)', '[12]', '--', '—', '–', '“quoted”', "'s", ',', '.', 'résumé', 'ﬁrst', 'x-ray', 'well-known',
      'anti-inflammatory', 'http://example.com/a-b', 'a@b.org', '#tag', '@user', ':)', '10:30', '1st', '$5', '1990s', 'C57BL/6',
    );
    const separator = fc.constantFrom(' ', '  ', '\n', '\t', '\u00a0', '', '\r\n\r\n', ' - ');
    const text = fc.array(fc.tuple(token, separator), { maxLength: 30 }).map((parts) => parts.map(([t, s]) => t + s).join(''));
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 4 }), (texts) => {
        // Analyze them all first (filling the memo), then compare each with a fresh tokenization.
        const memoized = texts.map(analyze);
        texts.forEach((t, i) => expect(memoized[i]).toEqual(analyzeUncached(t)));
        texts.forEach((t, i) => expect(analyze(t)).toEqual(memoized[i]!));
      }),
      { numRuns: 300 },
    );
  });

  test('SciFact documents and queries', async () => {
    const data = await loadSciFact();
    expect(data).toBeDefined(); // ../shared/eval/scifact-train is always beside the checkout
    const texts = [...data!.corpus.slice(0, 800).map((d) => d.text), ...data!.queries.map((q) => q.text)];
    for (const t of texts) analyze(t);
    const differing = texts.filter((t) => analyze(t).join(' ') !== analyzeUncached(t).join(' '));
    expect(differing).toEqual([]);
  }, 120_000);
});
