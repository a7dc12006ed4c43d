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

export function hitsTable(hits: { score: number; contentId: string; contentChunk: string; fullTextScore?: number; semanticScore?: number }[]): string {
  const legs = hits.some((h) => h.fullTextScore !== undefined);
  const headers = ['#', 'score', ...(legs ? ['full-text', 'semantic'] : []), 'content', 'text'];
  const rows = hits.map((h, i) => [
    String(i + 1),
    h.score.toFixed(4),
    ...(legs ? [h.fullTextScore?.toFixed(3) ?? '', h.semanticScore?.toFixed(3) ?? ''] : []),
    h.contentId,
    oneLine(h.contentChunk, 80),
  ]);
  return table(headers, rows);
}
