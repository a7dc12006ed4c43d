// Shared pieces of the benchmark parts run by bench/run.ts: percentiles, tables, size parsing,
// the SciFact replica corpus, the deterministic hashed embedder (and its OpenAI-compatible stub
// server), and starting the real server on a temporary data directory.
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { followOutput } from '../test/helpers/output';
import type { CorpusDoc } from './eval-data';

export const REPO_ROOT = resolve(import.meta.dir, '..');
export const CORES = cpus().length;

// --- numbers ----------------------------------------------------------------------------------

export interface Latency {
  p50: number;
  p95: number;
  p99: number;
  mean: number;
  samples: number;
}

/** Nearest-rank percentiles of millisecond samples. */
export function summarize(samples: readonly number[]): Latency {
  const sorted = Float64Array.from(samples).sort();
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
  let sum = 0;
  for (const x of sorted) sum += x;
  return { p50: at(50), p95: at(95), p99: at(99), mean: sorted.length ? sum / sorted.length : NaN, samples: sorted.length };
}

/** Milliseconds of each call, `passes` times over the inputs. */
export function timeEach<T>(inputs: readonly T[], passes: number, call: (input: T) => unknown): number[] {
  const samples: number[] = [];
  for (let p = 0; p < passes; p++) {
    for (const input of inputs) {
      const t = performance.now();
      call(input);
      samples.push(performance.now() - t);
    }
  }
  return samples;
}

/** `n` evenly spread elements (all of them when there are fewer). */
export function spread<T>(list: readonly T[], n: number): T[] {
  if (list.length <= n) return [...list];
  return Array.from({ length: n }, (_, i) => list[Math.floor((i * list.length) / n)]!);
}

/** "10k", "50000", "0.2m" → a count. */
export function parseCount(raw: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([km]?)\s*$/i.exec(raw);
  if (!m) throw new Error(`not a count: "${raw}" (use e.g. 10k, 50000, 1m)`);
  const n = Number(m[1]) * (m[2]!.toLowerCase() === 'k' ? 1e3 : m[2]!.toLowerCase() === 'm' ? 1e6 : 1);
  return Math.round(n);
}

export const parseCounts = (raw: string): number[] => raw.split(',').filter((s) => s.trim()).map(parseCount);

export const fmtMs = (x: number | undefined) =>
  x === undefined || !Number.isFinite(x) ? '-' : x < 1 ? x.toFixed(3) : x < 10 ? x.toFixed(2) : x < 1000 ? x.toFixed(1) : x.toFixed(0);
export const fmtInt = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '-' : Math.round(x).toLocaleString('en-US'));
export const fmtCount = (x: number) => (x >= 1e6 && x % 1e5 === 0 ? `${x / 1e6}M` : x >= 1000 && x % 1000 === 0 ? `${x / 1000}k` : String(x));
export const f4 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(4));
export const pct = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '-' : `${(100 * x).toFixed(0)}%`);

export function printTable(title: string, header: string[], rows: (string | number)[][]): void {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, c) => Math.max(...cells.map((r) => (r[c] ?? '').length)));
  console.log(`\n${title}`);
  cells.forEach((row, i) => {
    console.log('  ' + row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '));
    if (i === 0) console.log('  ' + widths.map((w) => '-'.repeat(w)).join('  '));
  });
}

export function machine() {
  return { bun: Bun.version, cpu: cpus()[0]?.model ?? 'unknown', cores: CORES, loadAverage: loadavg().map((x) => +x.toFixed(2)) };
}

/** Resident set of a process, bytes (Linux /proc). */
export function rssOf(pid: number | 'self'): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** CPU seconds (user + system) of a process so far (Linux /proc). */
export function cpuSecondsOf(pid: number | 'self'): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

// --- the corpus -------------------------------------------------------------------------------

/**
 * `count` items of the corpus repeated; copy k ≥ 1 of a document ends with a marker word
 * (" rep<k>"), so every item's text is distinct and a text-derived embedding of a copy is a near
 * duplicate of its original, not an identical vector. The marker never occurs in a query.
 */
export function replicaTexts(corpus: readonly CorpusDoc[], count: number): { id: string; text: string; source: string }[] {
  return Array.from({ length: count }, (_, i) => {
    const doc = corpus[i % corpus.length]!;
    const copy = Math.floor(i / corpus.length);
    return { id: copy === 0 ? doc.id : `${doc.id}#${copy}`, source: doc.id, text: copy === 0 ? doc.text : `${doc.text} rep${copy}` };
  });
}

// --- a deterministic embedder -----------------------------------------------------------------

export { mulberry32 } from '../test/helpers/random';

export const HASH_MODEL = 'bench-hash';
export const HASH_DIMENSIONS = 384;

const STOP = new Set(
  'a an and are as at be by for from has have in is it its of on or that the this to was were which with we our not no but than these those been'.split(' '),
);

/** FNV-1a, 32-bit. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Feature hashing of word prefixes (a crude stem: the first 6 letters), sublinear term
 * frequency, a signed bucket per word, L2-normalized: a lexical "embedding" that costs
 * microseconds, keeps similar texts close and stands in for a neural model in the benchmarks.
 */
export function hashEmbed(text: string, dimensions = HASH_DIMENSIONS): Float32Array {
  const counts = new Map<string, number>();
  for (const raw of text.toLowerCase().split(/[^a-z0-9]+/)) {
    if (raw.length < 2 || STOP.has(raw)) continue;
    const w = raw.slice(0, 6);
    counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  const v = new Float32Array(dimensions);
  for (const [w, n] of counts) {
    const h = fnv1a(w);
    v[h % dimensions]! += (h & 0x80000000 ? -1 : 1) * (1 + Math.log(n));
  }
  let s = 0;
  for (let i = 0; i < dimensions; i++) s += v[i]! * v[i]!;
  const norm = Math.sqrt(s);
  if (norm > 0) for (let i = 0; i < dimensions; i++) v[i]! /= norm;
  else v[0] = 1;
  return v;
}

/** An OpenAI-compatible POST /embeddings on 127.0.0.1 answering with hashEmbed vectors. */
export function startHashEmbedder(): { url: string; stop: () => void; calls: () => { requests: number; inputs: number } } {
  let requests = 0;
  let inputs = 0;
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const path = new URL(req.url).pathname;
      if (req.method !== 'POST' || !path.endsWith('/embeddings')) return new Response('not found', { status: 404 });
      const body = (await req.json()) as { input: string | string[] };
      const texts = Array.isArray(body.input) ? body.input : [body.input];
      requests++;
      inputs += texts.length;
      // Five decimals are plenty for benchmark vectors and keep responses small.
      const data = texts.map((t, index) => ({ object: 'embedding', index, embedding: Array.from(hashEmbed(t), (x) => Math.round(x * 1e5) / 1e5) }));
      return Response.json({ object: 'list', model: HASH_MODEL, data });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true), calls: () => ({ requests, inputs }) };
}

// --- the real server --------------------------------------------------------------------------

export interface ServerHandle {
  port: number;
  base: string;
  pid: number;
  /** Warnings and errors the server logged (LOG_LEVEL=warn). */
  logs: string[];
  exitCode: () => number | undefined;
  /** SIGTERM and wait; resolves with the milliseconds the shutdown took. */
  stop: () => Promise<number>;
}

/** A port free right now on 127.0.0.1. */
export function freePort(): number {
  const s = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

/** Start `bun src/main.ts` with LOG_LEVEL=warn on a port chosen here; resolves once /health answers. */
export async function startServer(env: Record<string, string>, timeoutMs = 120_000): Promise<ServerHandle> {
  const port = freePort();
  const proc = Bun.spawn(['bun', join(REPO_ROOT, 'src/main.ts')], {
    env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdout: 'pipe',
    stderr: 'pipe',
    cwd: REPO_ROOT,
  });
  let exitCode: number | undefined;
  void proc.exited.then((code) => (exitCode = code));
  // Both streams are drained for the server's whole life, so it never blocks on a full pipe.
  const logs = followOutput(proc, 200).lines;
  const base = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  for (;;) {
    if (exitCode !== undefined) throw new Error(`server exited (${exitCode}) before answering: ${logs.slice(-5).join(' | ')}`);
    const ok = await fetch(`${base}/health`).then((r) => r.ok, () => false);
    if (ok) break;
    if (performance.now() - t0 > timeoutMs) {
      proc.kill('SIGKILL');
      throw new Error('server did not answer /health in time');
    }
    await Bun.sleep(20);
  }
  return {
    port,
    base,
    pid: proc.pid,
    logs,
    exitCode: () => exitCode,
    stop: async () => {
      const t = performance.now();
      if (exitCode === undefined) {
        proc.kill('SIGTERM');
        const done = await Promise.race([proc.exited.then(() => true), Bun.sleep(120_000).then(() => false)]);
        if (!done) proc.kill('SIGKILL');
        await proc.exited;
      }
      return performance.now() - t;
    },
  };
}

/** Poll GET /ready until 200; milliseconds from `since` (performance.now() at spawn). */
export async function waitReady(base: string, since: number, timeoutMs = 600_000): Promise<number> {
  for (;;) {
    const status = await fetch(`${base}/ready`).then((r) => (r.body?.cancel(), r.status), () => 0);
    if (status === 200) return performance.now() - since;
    if (performance.now() - since > timeoutMs) throw new Error('server not ready in time');
    await Bun.sleep(10);
  }
}

/** Prometheus text → map of `name{labels}` → value. */
export async function scrapeMetrics(base: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    out.set(line.slice(0, sp), Number(line.slice(sp + 1)));
  }
  return out;
}

/** Sum of a metric over its label sets. */
export function metricSum(metrics: Map<string, number>, name: string): number {
  let sum = 0;
  for (const [k, v] of metrics) if (k === name || k.startsWith(`${name}{`)) sum += v;
  return sum;
}

// --- SciFact, or a generated stand-in -----------------------------------------------------------

/** SciFact train when present; otherwise a generated corpus (latency only: no judgments). */
export async function loadCorpus(): Promise<{ data: import('./eval-data').SciFact; generated: boolean }> {
  const { loadSciFact } = await import('./eval-data');
  const data = await loadSciFact();
  if (data) return { data, generated: false };
  // Zipf-like vocabulary of made-up words, 1,000-character documents, 5-word queries.
  let seed = 12345;
  const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
  const vocab = Array.from({ length: 20_000 }, (_, i) => `w${i.toString(36)}x`);
  const word = () => vocab[Math.floor(vocab.length * random() ** 3)]!;
  const sentence = (n: number) => Array.from({ length: n }, word).join(' ');
  const corpus = Array.from({ length: 5000 }, (_, i) => ({ id: `g${i}`, text: `${sentence(8)}\n\n${Array.from({ length: 8 }, () => sentence(20) + '.').join(' ')}` }));
  const queries = Array.from({ length: 500 }, (_, i) => ({ id: `q${i}`, text: sentence(5) }));
  return { data: { dir: '(generated)', corpus, queries, relevant: new Map() }, generated: true };
}

/** A spread sample of judged queries and a corpus of their relevant documents plus an even spread of others. */
export function sampleWorkload(data: import('./eval-data').SciFact, queryCount: number, documentCount: number) {
  const judged = data.queries.filter((q) => data.relevant.has(q.id));
  const queries = spread(judged.length ? judged : data.queries, queryCount);
  const needed = new Set(queries.flatMap((q) => [...(data.relevant.get(q.id) ?? [])]));
  const others = spread(data.corpus.filter((d) => !needed.has(d.id)), Math.max(0, documentCount - needed.size));
  const keep = new Set([...needed, ...others.map((d) => d.id)]);
  return { queries, corpus: data.corpus.filter((d) => keep.has(d.id)) };
}

/** `phase(name, run)` prints a section header and its duration; `phases` collects the durations (ms). */
export function phaseTimer() {
  const phases: Record<string, number> = {};
  async function phase<T>(name: string, run: () => T | Promise<T>): Promise<T> {
    console.log(`\n== ${name}`);
    const t = performance.now();
    const value = await run();
    phases[name] = Math.round(performance.now() - t);
    console.log(`   (${(phases[name] / 1000).toFixed(1)} s)`);
    return value;
  }
  return { phases, phase };
}
