// CSV/TSV → one line per data row, each value labelled with its column's header:
// `Name: Alice | City: Berlin`. Empty values are left out. Parsing (quotes, delimiters) is
// papaparse's; the delimiter is detected (comma, semicolon, tab, pipe).
import Papa from 'papaparse';
import { ExtractionError } from '../errors';

export function csvToText(csv: string, tabSeparated = false): string {
  const parsed = Papa.parse<string[]>(csv.replace(/^\uFEFF/, ''), {
    header: false,
    skipEmptyLines: 'greedy',
    delimiter: tabSeparated ? '\t' : '',
  });
  const rows = parsed.data.filter((r) => Array.isArray(r) && r.some((v) => typeof v === 'string' && v.trim() !== ''));
  if (rows.length === 0) {
    if (parsed.errors.length > 0) throw new ExtractionError('EXTRACTION_FAILED', 'The CSV file could not be parsed.', parsed.errors[0]!.message);
    return '';
  }
  const clean = (v: unknown) => (typeof v === 'string' ? v.replace(/\s+/g, ' ').trim() : '');
  const header = rows[0]!.map((h, i) => clean(h) || `Column ${i + 1}`);
  if (rows.length === 1) return header.join(' | ');
  const lines: string[] = [];
  for (let r = 1; r < rows.length; r++) {
    const cells: string[] = [];
    rows[r]!.forEach((value, i) => {
      const v = clean(value);
      if (v) cells.push(`${header[i] ?? `Column ${i + 1}`}: ${v}`);
    });
    if (cells.length > 0) lines.push(cells.join(' | '));
  }
  return lines.join('\n');
}
