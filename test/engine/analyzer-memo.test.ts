// The analyzer's per-piece memo (engine/analysis/analyzer.ts): a word boundary always falls at
// whitespace, so analyzing each whitespace-separated piece on its own (memoized) gives the terms of
// segmenting the whole text at once. Checked on SciFact (../shared/eval, present in CI) and on
// random texts built from the characters that steer word segmentation.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { analyze, analyzeUncached } from '../../engine/analysis/analyzer';
import { loadSciFact } from '../../support/retrieval-eval';

describe('analysis depends on the text alone', () => {
  test('what the process read before changes nothing', () => {
    const query = "feature of Huntington's disease";
    const before = analyze(query);
    expect(before).toEqual(['featur', 'huntington', 'diseas']);
    analyze("myotonic dystrophy, Huntington's, etc.) and even some forms of");
    expect(analyze(query)).toEqual(before);
    expect(analyzeUncached(query)).toEqual(before);
  });

  test('pieces split at spaces, no-break spaces, tabs and line breaks', () => {
    expect(analyze('alpha\tbeta\ngamma\u00a0delta\u2009epsilon\r\n\r\nzeta  eta\u3000theta')).toEqual([
      'alpha',
      'beta',
      'gamma',
      'delta',
      'epsilon',
      'zeta',
      'eta',
      'theta',
    ]);
  });
});

describe('the memo gives the terms of segmenting the whole text', () => {
  test('random texts of words, numbers, hyphens, apostrophes, periods and brackets', () => {
    const token = fc.constantFrom(
      'cell',
      'Cells',
      "cell's",
      "Huntington's",
      'IL-6',
      'il',
      '6',
      'covid-19',
      'e.g.',
      'U.S.',
      'Dr.',
      "can't",
      'cannot',
      'gonna',
      '3.5',
      '1,000',
      '(p<0.05)',
      '[12]',
      '--',
      '—',
      '–',
      '“quoted”',
      "'s",
      ',',
      '.',
      'résumé',
      'ﬁrst',
      'x-ray',
      'well-known',
      'anti-inflammatory',
      'http://example.com/a-b',
      'a@b.org',
      '#tag',
      '@user',
      ':)',
      '10:30',
      '1st',
      '$5',
      '1990s',
      'C57BL/6',
      'patients’',
      'FDA’s',
      'α-helix',
      'km²',
      'naïve',
      'a\u00adb',
      'x\ufeffy',
      '日本語',
      '👍🏽',
    );
    const separator = fc.constantFrom(' ', '  ', '\n', '\t', '\u00a0', '', '\r\n\r\n', ' - ', '\u2009', '\u3000');
    const text = fc.array(fc.tuple(token, separator), { maxLength: 30 }).map((parts) => parts.map(([t, s]) => t + s).join(''));
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 4 }), (texts) => {
        // Analyze them all first (filling the memo), then compare each with the whole text segmented at once.
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
