// Plain-text tables for the CLI: columns padded to their widest cell, long text cut to one line.

const ELLIPSIS = '…';

/** One line of at most `width` characters (whitespace collapsed). */
export function oneLine(text: string, width: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const chars = [...flat];
  return chars.length <= width ? flat : `${chars.slice(0, width - 1).join('')}${ELLIPSIS}`;
}

export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max([...h].length, ...rows.map((r) => [...(r[i] ?? '')].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

interface Span {
  start: number;
  end: number;
}

/** The snippet with its matched words between «», from the hit's highlights (offsets into the chunk). */
export function markedSnippet(snippet: Span & { text: string }, highlights: readonly Span[]): string {
  let out = '';
  let at = snippet.start;
  for (const h of highlights) {
    if (h.start < at || h.end > snippet.end) continue;
    out += `${snippet.text.slice(at - snippet.start, h.start - snippet.start)}«${snippet.text.slice(h.start - snippet.start, h.end - snippet.start)}»`;
    at = h.end;
  }
  return out + snippet.text.slice(at - snippet.start);
}

export function hitsTable(
  hits: {
    score: number;
    contentId: string;
    contentChunk: string;
    metadata?: Record<string, unknown>;
    fullTextScore?: number;
    semanticScore?: number;
    highlights?: Span[];
    snippet?: Span & { text: string };
  }[],
): string {
  const legs = hits.some((h) => h.fullTextScore !== undefined);
  const headers = ['#', 'score', ...(legs ? ['full-text', 'semantic'] : []), 'content', 'text'];
  const rows = hits.map((h, i) => [
    String(i + 1),
    h.score.toFixed(4),
    ...(legs ? [h.fullTextScore?.toFixed(3) ?? '', h.semanticScore?.toFixed(3) ?? ''] : []),
    // Where the item came from when the CLI ingested it (its path), else its id.
    typeof h.metadata?.path === 'string' ? oneLine(h.metadata.path, 48) : h.contentId,
    oneLine(h.snippet ? markedSnippet(h.snippet, h.highlights ?? []) : h.contentChunk, h.snippet ? 120 : 80),
  ]);
  return table(headers, rows);
}
