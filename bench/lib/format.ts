// Numbers for people: counts such as "10k" read from the command line, and table cells
// ('-' for anything missing or not finite).

const finite = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

/** "10k", "50000", "0.2m" → a count. */
export function parseCount(raw: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([km]?)\s*$/i.exec(raw);
  if (!m) throw new Error(`not a count: "${raw}" (use e.g. 10k, 50000, 1m)`);
  const n = Number(m[1]) * (m[2]!.toLowerCase() === 'k' ? 1e3 : m[2]!.toLowerCase() === 'm' ? 1e6 : 1);
  return Math.round(n);
}

export const parseCounts = (raw: string): number[] =>
  raw
    .split(',')
    .filter((s) => s.trim())
    .map(parseCount);

export const fmtMs = (x: unknown) => (!finite(x) ? '-' : x < 1 ? x.toFixed(3) : x < 10 ? x.toFixed(2) : x < 1000 ? x.toFixed(1) : x.toFixed(0));
export const fmtInt = (x: unknown) => (!finite(x) ? '-' : Math.round(x).toLocaleString('en-US'));
export const fmtCount = (x: number) => (x >= 1e6 && x % 1e5 === 0 ? `${x / 1e6}M` : x >= 1000 && x % 1000 === 0 ? `${x / 1000}k` : String(x));
/** 12,345 → "12.3k": chart ticks and labels. */
export const kcount = (x: number) => (x >= 1e6 ? `${+(x / 1e6).toFixed(1)}M` : x >= 1e3 ? `${+(x / 1e3).toFixed(1)}k` : String(Math.round(x)));
export const f3 = (x: unknown) => (!finite(x) ? '-' : x.toFixed(3));
export const f4 = (x: unknown) => (!finite(x) ? '-' : x.toFixed(4));
export const pct = (x: unknown) => (!finite(x) ? '-' : `${(100 * x).toFixed(0)}%`);
/** Milliseconds as seconds: "12.3 s". */
export const secs = (millis: number) => `${(millis / 1000).toFixed(1)} s`;
