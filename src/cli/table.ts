// Plain-text tables for the CLI: columns padded to their widest cell, long text cut to one line.

const ELLIPSIS = '…';

/** One line of at most `width` characters (whitespace collapsed). */
export function oneLine(text: string, width: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const chars = [...flat];
  return chars.length <= width ? flat : `${chars.slice(0, width - 1).join('')}${ELLIPSIS}`;
}

/** The last `width` characters of the text on one line (whitespace collapsed): the part nearest what follows. */
export function oneLineTail(text: string, width: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const chars = [...flat];
  return chars.length <= width ? flat : `${ELLIPSIS}${chars.slice(chars.length - width + 1).join('')}`;
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

interface ContextChunk {
  id: string;
  contentChunk: string;
}

/**
 * Each hit's neighbouring chunks (search --context), below the table: the end of each chunk before
 * it and the beginning of each chunk after it, nearest the hit, one line each.
 */
export function contextBlock(
  hits: { contentId: string; contentChunk: string; metadata?: Record<string, unknown>; context?: { before: ContextChunk[]; after: ContextChunk[] } }[],
  width = 100,
): string {
  const blocks: string[] = [];
  hits.forEach((h, i) => {
    if (!h.context) return;
    const source = typeof h.metadata?.path === 'string' ? h.metadata.path : h.contentId;
    const lines = [`#${i + 1} in ${source}:`];
    for (const c of h.context.before) lines.push(`  before  ${oneLineTail(c.contentChunk, width)}`);
    lines.push(`  hit     ${oneLine(h.contentChunk, width)}`);
    for (const c of h.context.after) lines.push(`  after   ${oneLine(c.contentChunk, width)}`);
    blocks.push(lines.join('\n'));
  });
  return blocks.join('\n\n');
}
