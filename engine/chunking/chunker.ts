// Structure-aware chunking. A chunk ends, by preference, at a paragraph or heading boundary, then
// at a sentence boundary, then between words; never inside a word. Every chunk is a [start, end)
// span of the original text, so hits can point back into the content.

export interface ChunkSpan {
  start: number;
  end: number;
}

export interface ChunkingOptions {
  /** Target chunk length in characters. */
  size: number;
  /** Characters of the previous chunk repeated at the start of the next (0 = none). */
  overlap: number;
}

const enum Break {
  Word = 1,
  Sentence = 2,
  Paragraph = 3,
}

const sentenceSegmenter = new Intl.Segmenter('en', { granularity: 'sentence' });
const WHITESPACE = /\s/;

/** Positions where a chunk may end, each with the strength of the boundary there. */
function breakPoints(text: string): Map<number, Break> {
  const points = new Map<number, Break>();
  const mark = (pos: number, kind: Break) => {
    if ((points.get(pos) ?? 0) < kind) points.set(pos, kind);
  };
  // Between words: the start of every whitespace run.
  for (let i = 1; i < text.length; i++) {
    if (WHITESPACE.test(text[i]!) && !WHITESPACE.test(text[i - 1]!)) mark(i, Break.Word);
  }
  for (const seg of sentenceSegmenter.segment(text)) {
    if (seg.index > 0) mark(seg.index, Break.Sentence);
  }
  // Blank lines and Markdown headings start a new block.
  for (const m of text.matchAll(/\n[ \t]*\n|\n(?=#{1,6}\s)/g)) mark(m.index!, Break.Paragraph);
  return points;
}

function skipWhitespace(text: string, pos: number): number {
  while (pos < text.length && WHITESPACE.test(text[pos]!)) pos++;
  return pos;
}

function trimEnd(text: string, start: number, end: number): number {
  while (end > start && WHITESPACE.test(text[end - 1]!)) end--;
  return end;
}

export function chunkText(text: string, { size, overlap }: ChunkingOptions): ChunkSpan[] {
  if (size < 1) throw new RangeError('chunk size must be positive');
  overlap = Math.max(0, Math.min(overlap, Math.floor(size / 2)));
  const spans: ChunkSpan[] = [];
  const points = breakPoints(text);
  const sorted = [...points.keys()].sort((a, b) => a - b);
  // Index of the first break point at or after `pos` (binary search).
  const firstAtOrAfter = (pos: number): number => {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (sorted[mid]! < pos) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };

  let start = skipWhitespace(text, 0);
  let prevEnd = start; // a chunk must reach past the previous one, or overlap would repeat it
  while (start < text.length) {
    let end: number;
    if (text.length - start <= size) {
      end = text.length;
    } else {
      // The strongest boundary in the second half of the window, the latest among equals.
      const minEnd = Math.max(prevEnd + 1, start + Math.max(1, Math.floor(size / 2)));
      const maxEnd = start + size;
      let best = -1;
      let bestKind = 0;
      for (let i = firstAtOrAfter(minEnd); i < sorted.length && sorted[i]! <= maxEnd; i++) {
        const kind = points.get(sorted[i]!)!;
        if (kind >= bestKind) {
          best = sorted[i]!;
          bestKind = kind;
        }
      }
      if (best < 0) {
        // No boundary in the second half: take any earlier one, else run past the window to the
        // end of the word (one giant token becomes one oversized chunk).
        const i = firstAtOrAfter(prevEnd + 1);
        const before = i < sorted.length && sorted[i]! <= maxEnd;
        if (before) {
          let j = i;
          while (j + 1 < sorted.length && sorted[j + 1]! <= maxEnd) j++;
          best = sorted[j]!;
        } else {
          best = i < sorted.length ? sorted[i]! : text.length;
        }
      }
      end = best;
    }
    const trimmed = trimEnd(text, start, end);
    if (trimmed > start) spans.push({ start, end: trimmed });
    if (end >= text.length) break;
    prevEnd = end;

    let next = end;
    if (overlap > 0) {
      // Restart at the strongest boundary inside the overlap window (a sentence start rather
      // than a mid-sentence word when there is one), the earliest among equals.
      let bestKind = 0;
      for (let i = firstAtOrAfter(Math.max(start + 1, end - overlap)); i < sorted.length && sorted[i]! < end; i++) {
        const kind = points.get(sorted[i]!)!;
        if (kind > bestKind) {
          next = sorted[i]!;
          bestKind = kind;
        }
      }
    }
    start = skipWhitespace(text, next);
  }
  return spans;
}
