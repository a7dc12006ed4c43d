// Highlights: where the words of a chunk that match the query are, as character offsets into the
// chunk's text, and a short snippet around the best match. A word matches when the analyzer turns
// it into one of the query's terms, so stems match ("refunds" for "refund") exactly as the index
// matched them; stop words never do.
import { analyzeUncached } from '../analysis/analyzer';

export interface Highlight {
  start: number;
  end: number;
}

/** A window of the chunk: `text` is exactly `chunk.slice(start, end)`, so highlights map into it by subtracting `start`. */
export interface Snippet {
  start: number;
  end: number;
  text: string;
}

const words = new Intl.Segmenter('en', { granularity: 'word' });

export function highlightsOf(text: string, terms: ReadonlySet<string>): Highlight[] {
  const out: Highlight[] = [];
  if (terms.size === 0) return out;
  for (const s of words.segment(text)) {
    if (!s.isWordLike) continue;
    if (analyzeUncached(s.segment).some((t) => terms.has(t))) out.push({ start: s.index, end: s.index + s.segment.length });
  }
  return out;
}

export const SNIPPET_CHARS = 200;

/**
 * About `width` characters around the densest run of highlights (the window holding most of them,
 * the earliest on ties), cut at word boundaries; the chunk's start when nothing matched.
 */
export function snippetOf(text: string, highlights: readonly Highlight[], width = SNIPPET_CHARS): Snippet {
  if (text.length <= width) return { start: 0, end: text.length, text };
  let anchor = 0;
  if (highlights.length > 0) {
    let best = 0;
    let bestCount = 0;
    let j = 0;
    for (let i = 0; i < highlights.length; i++) {
      while (j < highlights.length && highlights[j]!.end <= highlights[i]!.start + width) j++;
      if (j - i > bestCount) {
        bestCount = j - i;
        best = i;
      }
    }
    // A little context before the first match of the run.
    anchor = Math.max(0, highlights[best]!.start - Math.floor(width / 5));
  }
  let start = Math.min(anchor, text.length - width);
  let end = start + width;
  // Whole words: move the start back and the end forward to the nearest whitespace (within a word's length).
  const back = text.lastIndexOf(' ', start);
  if (start > 0 && back >= 0 && start - back < 24) start = back + 1;
  const forward = text.indexOf(' ', end);
  if (end < text.length && forward >= 0 && forward - end < 24) end = forward;
  else end = Math.min(end, text.length);
  return { start, end, text: text.slice(start, end) };
}
