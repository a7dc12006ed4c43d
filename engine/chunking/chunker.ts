// Structure-aware chunking. A chunk ends, by preference, at a paragraph or heading boundary, then
// at a sentence boundary, then between words; never inside a word. Every chunk is a [start, end)
// span of the original text, so hits can point back into the content. Boundaries are found in
// one window at a time, so memory stays proportional to the chunk size however long the text.

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

enum Break {
  Word = 1,
  Sentence = 2,
  Paragraph = 3,
}

const sentenceSegmenter = new Intl.Segmenter('en', { granularity: 'sentence' });
const WHITESPACE = /\s/;
const isSpace = (c: string | undefined) => c !== undefined && WHITESPACE.test(c);

/**
 * Boundaries inside text[from, to], strongest kind kept per position. Positions are absolute.
 * A word boundary is the start of a whitespace run; sentences come from ICU segmentation of the
 * window; paragraphs are blank lines and Markdown headings.
 */
function boundaries(text: string, from: number, to: number): Map<number, Break> {
  const points = new Map<number, Break>();
  const mark = (pos: number, kind: Break) => {
    if (pos > from && pos <= to && (points.get(pos) ?? 0) < kind) points.set(pos, kind);
  };
  const window = text.slice(from, Math.min(text.length, to + 1));
  for (let i = 1; i < window.length; i++) {
    if (isSpace(window[i]) && !isSpace(window[i - 1])) mark(from + i, Break.Word);
  }
  for (const seg of sentenceSegmenter.segment(window)) if (seg.index > 0) mark(from + seg.index, Break.Sentence);
  for (const m of window.matchAll(/\n[ \t]*\n|\n(?=#{1,6}\s)/g)) mark(from + m.index!, Break.Paragraph);
  return points;
}

function skipWhitespace(text: string, pos: number): number {
  while (pos < text.length && isSpace(text[pos])) pos++;
  return pos;
}

function trimEnd(text: string, start: number, end: number): number {
  while (end > start && isSpace(text[end - 1])) end--;
  return end;
}

/** Where the chunk starting at `start` ends (`prevEnd`: where the previous chunk ended). */
function chunkEnd(text: string, start: number, prevEnd: number, size: number): number {
  if (text.length - start <= size) return text.length;
  const maxEnd = start + size;
  const points = boundaries(text, start, maxEnd);
  // The strongest boundary in the second half of the window, the latest among equals, and past
  // the previous chunk's end (so overlap never repeats a whole chunk).
  const minEnd = Math.max(prevEnd + 1, start + Math.max(1, Math.floor(size / 2)));
  let best = -1;
  let bestKind = 0;
  let anyAfterPrev = -1;
  for (const [pos, kind] of points) {
    if (pos > prevEnd && pos > anyAfterPrev) anyAfterPrev = pos;
    if (pos < minEnd) continue;
    if (kind > bestKind || (kind === bestKind && pos > best)) {
      best = pos;
      bestKind = kind;
    }
  }
  if (best >= 0) return best;
  // No boundary in the second half: the last earlier one, else run past the window to the end of
  // the word (one giant token becomes one oversized chunk).
  if (anyAfterPrev >= 0) return anyAfterPrev;
  let pos = maxEnd;
  while (pos < text.length && !isSpace(text[pos])) pos++;
  return pos;
}

/** Where the next chunk starts: the strongest boundary inside the overlap, the earliest among equals. */
function nextStart(text: string, start: number, end: number, overlap: number): number {
  if (overlap <= 0) return end;
  const from = Math.max(start, end - overlap - 1);
  let next = end;
  let bestKind = 0;
  for (const [pos, kind] of boundaries(text, from, end - 1)) {
    if (pos <= start || pos < end - overlap) continue;
    if (kind > bestKind || (kind === bestKind && pos < next)) {
      next = pos;
      bestKind = kind;
    }
  }
  return next;
}

export function chunkText(text: string, { size, overlap }: ChunkingOptions): ChunkSpan[] {
  if (size < 1) throw new RangeError('chunk size must be positive');
  overlap = Math.max(0, Math.min(overlap, Math.floor(size / 2)));
  const spans: ChunkSpan[] = [];
  let start = skipWhitespace(text, 0);
  let prevEnd = start;
  while (start < text.length) {
    const end = chunkEnd(text, start, prevEnd, size);
    const trimmed = trimEnd(text, start, end);
    if (trimmed > start) spans.push({ start, end: trimmed });
    if (end >= text.length) break;
    prevEnd = end;
    start = skipWhitespace(text, nextStart(text, start, end, overlap));
  }
  return spans;
}
