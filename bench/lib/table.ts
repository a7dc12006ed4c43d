// Plain-text tables: first column left-aligned, the others right-aligned, a rule under the header.

export function formatTable(header: string[], rows: (string | number)[][], indent = ''): string {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, c) => Math.max(...cells.map((r) => (r[c] ?? '').length)));
  const line = (row: string[]) => indent + row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ');
  return [line(cells[0]!), indent + widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

/** A blank line, the title, then the table indented by two spaces. */
export function printTable(title: string, header: string[], rows: (string | number)[][]): void {
  console.log(`\n${title}`);
  console.log(formatTable(header, rows, '  '));
}
