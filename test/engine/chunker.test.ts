import { describe, expect, test } from 'bun:test';
import { chunkText } from '../../engine/chunking/chunker';

const isSpace = (c: string | undefined) => c === undefined || /\s/.test(c);

/** Invariants every chunking must satisfy. */
function checkInvariants(text: string, size: number, overlap: number) {
  const spans = chunkText(text, { size, overlap });
  let covered = 0;
  let prevEnd = -1;
  for (const s of spans) {
    expect(s.start).toBeGreaterThanOrEqual(0);
    expect(s.end).toBeLessThanOrEqual(text.length);
    expect(s.end).toBeGreaterThan(s.start);
    // Never inside a word: each edge touches whitespace or the text's edge.
    expect(isSpace(text[s.start - 1]) || isSpace(text[s.start])).toBe(true);
    expect(isSpace(text[s.end]) || isSpace(text[s.end - 1])).toBe(true);
    // No leading/trailing whitespace in a chunk.
    expect(isSpace(text[s.start])).toBe(false);
    expect(isSpace(text[s.end - 1])).toBe(false);
    // Longer than the target only when no word boundary was left inside the window.
    if (s.end - s.start > size) {
      for (let p = Math.max(prevEnd, s.start) + 1; p <= s.start + size; p++) {
        expect(isSpace(text[p]) && !isSpace(text[p - 1])).toBe(false);
      }
    }
    // Progress: every chunk reaches further than the one before.
    expect(s.end).toBeGreaterThan(prevEnd);
    // Coverage: no gap between consecutive chunks except whitespace.
    expect(text.slice(covered, s.start).trim()).toBe('');
    covered = Math.max(covered, s.end);
    prevEnd = s.end;
  }
  expect(text.slice(covered).trim()).toBe('');
  return spans;
}

describe('chunkText', () => {
  test('short text is one chunk, trimmed', () => {
    expect(chunkText('  hello world \n', { size: 100, overlap: 10 })).toEqual([{ start: 2, end: 13 }]);
  });

  test('whitespace-only text gives no chunks', () => {
    expect(chunkText('   \n\n  ', { size: 100, overlap: 0 })).toEqual([]);
  });

  test('prefers paragraph, then sentence boundaries', () => {
    const p1 = 'First paragraph sentence one. Sentence two is here.';
    const p2 = 'Second paragraph starts. It goes on.';
    const text = `${p1}\n\n${p2}`;
    const spans = chunkText(text, { size: 70, overlap: 0 });
    expect(spans.map((s) => text.slice(s.start, s.end))).toEqual([p1, p2]);

    const sentences = 'Alpha beta gamma delta. Epsilon zeta eta theta. Iota kappa lambda mu.';
    const s2 = chunkText(sentences, { size: 50, overlap: 0 }).map((s) => sentences.slice(s.start, s.end));
    expect(s2[0]).toBe('Alpha beta gamma delta. Epsilon zeta eta theta.');
  });

  test('a Markdown heading starts a new chunk', () => {
    const text = 'Intro text that is long enough to matter here.\n## Usage\nRun the thing with care and patience.';
    const spans = chunkText(text, { size: 60, overlap: 0 }).map((s) => text.slice(s.start, s.end));
    expect(spans[1]!.startsWith('## Usage')).toBe(true);
  });

  test('overlap repeats the end of the previous chunk without cutting words', () => {
    const words = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');
    const spans = checkInvariants(words, 100, 30);
    for (let i = 1; i < spans.length; i++) {
      expect(spans[i]!.start).toBeLessThan(spans[i - 1]!.end);
      expect(spans[i - 1]!.end - spans[i]!.start).toBeLessThanOrEqual(30);
    }
  });

  test('a single giant word becomes one oversized chunk', () => {
    const giant = 'x'.repeat(500);
    const text = `small words ${giant} tail words`;
    const spans = chunkText(text, { size: 100, overlap: 10 }).map((s) => text.slice(s.start, s.end));
    expect(spans.some((s) => s.includes(giant))).toBe(true);
    for (const s of spans) expect(s.includes('x'.repeat(10)) ? s.includes(giant) : true).toBe(true);
  });

  test('invariants hold on random texts', () => {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 40; round++) {
      const parts: string[] = [];
      const n = 20 + Math.floor(rand() * 300);
      for (let i = 0; i < n; i++) {
        const r = rand();
        parts.push(r < 0.05 ? '\n\n' : r < 0.15 ? '. ' : r < 0.2 ? `${'y'.repeat(1 + Math.floor(rand() * 80))} ` : `w${Math.floor(rand() * 1000)} `);
      }
      const size = 40 + Math.floor(rand() * 200);
      checkInvariants(parts.join(''), size, Math.floor(rand() * size * 0.4));
    }
  });
});
