// Snapshots at scale: a knowledge base of ~100k chunks WITH vectors.
//   1. restart   time from spawning the real server (`bun src/main.ts`) to the first 200 of /ready,
//                plus the engine's own `recovery` report: (a) by log replay only, (b) from a
//                snapshot (log truncated), (c) from a snapshot plus a log tail; each run N times;
//   2. stall     in process: a steady open-loop stream of addContent calls while `snapshotsOf(engine).snapshot()`
//                runs: (i) the first snapshot of a log-only directory (HNSW graph from scratch),
//                (ii) an incremental one (previous snapshot + log tail, graph continued);
//                acknowledgement latency before / during / after, the main thread's event-loop
//                stall (largest gap between the ticks of a 1 ms interval), and the engine's
//                background HNSW steps on the main thread, timed;
//   3. size      snapshot bytes per chunk (records.log, HNSW graph) versus the log before compaction.
//
//   bun bench/snapshot.ts [--quick] [--json out.json] [--chunks 100000] [--runs 3] [--tail 5000]
//                         [--rate 200] [--fresh] [--graph-wait 180] [--parts restart,stall]
//   --parts stall reuses the snapshot directory of an earlier run (snap-<chunks>/, made if missing).
//   --quick: 8k chunks, a 400-item tail, no incremental stall phase (about a minute once built).
// The machine has 2 cores: other processes running meanwhile skew every number here, so the
// 1-minute load average is recorded with each measurement.
//
// VECTORS COME FROM A HASHING STUB, NOT A NEURAL MODEL: a tiny OpenAI-compatible embeddings server
// (Bun.serve on 127.0.0.1, run by this script as a child process so its CPU and memory stay out of
// the measured process) returns deterministic 384-d vectors from feature-hashing the words of each
// input (plus a little noise seeded by the whole text, so replicated abstracts do not collapse
// onto near-identical vectors), L2-normalized. Embedding 100k chunks with USE-Lite would take
// hours on 2 cores; what is measured here (log, snapshot and graph sizes and times) depends on the
// dimensions and the count of vectors, not on where the numbers came from.
//
// Items are SciFact train abstracts (read from ../shared/eval, never copied here), replicated with
// a unique tag per item, chunked at 1000/100 characters (~2.15 chunks per abstract). The log-only
// data directory is built once through the engine under .bench-out/snapshot/base-<chunks>/ and
// reused (--fresh rebuilds it); every phase that changes a data directory works on a copy.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { chunkText } from '../engine/chunking/chunker';
import { decodePayload, FRAME_HEADER, scanFrames, type Engine, type EngineOptions, type LogRecord, type RecoveryReport, type VectorIndex } from '../engine';
import { openEngine, verifySnapshot, type SnapshotInfo, type Snapshotter } from '../snapshots';
import { textKbConfig } from '../test/helpers/kb-config';
import { fnv1a, mulberry32 } from './common';
import { loadSciFact } from './eval-data';

/** Engines opened here, with their snapshots (snapshots/snapshotter.ts). */
const snapshotters = new Map<Engine, Snapshotter>();
async function openBenchEngine(options: EngineOptions): Promise<Engine> {
  const { engine, snapshots } = await openEngine(options);
  snapshotters.set(engine, snapshots);
  return engine;
}
const snapshotsOf = (engine: Engine) => snapshotters.get(engine)!;

const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    quick: { type: 'boolean', default: false },
    json: { type: 'string' },
    chunks: { type: 'string' },
    runs: { type: 'string' },
    tail: { type: 'string' },
    rate: { type: 'string' },
    fresh: { type: 'boolean', default: false },
    'graph-wait': { type: 'string' },
    parts: { type: 'string', default: 'restart,stall' },
    stub: { type: 'boolean', default: false },
  },
  strict: true,
});

const DIMS = 384;
const MODEL = 'bench-hash';

// --- the hashing embeddings stub (child process: `bun bench/snapshot.ts --stub`) -----------------



function unit(x: Float64Array): void {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i]! * x[i]!;
  const n = Math.sqrt(s) || 1;
  for (let i = 0; i < x.length; i++) x[i]! /= n;
}

/** Feature hashing of the words (signed, sublinear tf) plus 0.3 of a per-text random unit vector. */
function hashEmbed(text: string): number[] {
  const counts = new Map<number, number>();
  for (const w of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const h = fnv1a(w);
    counts.set(h, (counts.get(h) ?? 0) + 1);
  }
  const v = new Float64Array(DIMS);
  for (const [h, n] of counts) v[h % DIMS]! += (h & 0x80000000 ? -1 : 1) * (1 + Math.log(n));
  unit(v);
  const rnd = mulberry32(fnv1a(text));
  const noise = new Float64Array(DIMS);
  for (let i = 0; i < DIMS; i++) noise[i] = rnd() * 2 - 1;
  unit(noise);
  for (let i = 0; i < DIMS; i++) v[i]! += 0.3 * noise[i]!;
  unit(v);
  return Array.from(v, (x) => Math.round(x * 1e6) / 1e6);
}

function runStub(): void {
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const url = new URL(req.url);
      if (req.method !== 'POST' || !url.pathname.endsWith('/embeddings')) return new Response('not found', { status: 404 });
      const body = (await req.json().catch(() => undefined)) as { input?: string[] | string; model?: string } | undefined;
      const input = typeof body?.input === 'string' ? [body.input] : body?.input;
      if (!Array.isArray(input)) return Response.json({ error: { message: 'input must be a string or an array of strings' } }, { status: 400 });
      const data = input.map((text, index) => ({ object: 'embedding', index, embedding: hashEmbed(String(text)) }));
      return Response.json({ object: 'list', model: body?.model ?? MODEL, data, usage: { prompt_tokens: 0, total_tokens: 0 } });
    },
  });
  console.log(JSON.stringify({ port: server.port }));
  // Runs until the parent kills it, or its stdin (a pipe from the parent) closes.
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
}

// --- helpers --------------------------------------------------------------------------------------

interface Dist {
  n: number;
  p50: number;
  p99: number;
  max: number;
  mean: number;
}

const r2 = (x: number) => Math.round(x * 100) / 100;
const r1 = (x: number) => Math.round(x * 10) / 10;
const MiB = 1024 * 1024;
const mib = (b: number) => r1(b / MiB);

function dist(values: number[]): Dist {
  if (values.length === 0) return { n: 0, p50: NaN, p99: NaN, max: NaN, mean: NaN };
  const s = [...values].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
  return { n: s.length, p50: r2(at(0.5)), p99: r2(at(0.99)), max: r2(s[s.length - 1]!), mean: r2(s.reduce((a, b) => a + b, 0) / s.length) };
}

function dirBytes(dir: string): number {
  if (!existsSync(dir)) return 0;
  let total = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    total += st.isDirectory() ? dirBytes(p) : st.size;
  }
  return total;
}

function procStatus(pid: number): { rssMiB?: number; hwmMiB?: number } {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => {
      const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
      return m ? r1(Number(m[1]) / 1024) : undefined;
    };
    return { rssMiB: kb('VmRSS'), hwmMiB: kb('VmHWM') };
  } catch {
    return {};
  }
}

function table(header: string[], rows: (string | number)[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i] ?? '').length)));
  const line = (cells: (string | number)[]) => cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]!) : String(c).padStart(widths[i]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

function copyDir(from: string, to: string): void {
  rmSync(to, { recursive: true, force: true });
  cpSync(from, to, { recursive: true });
  rmSync(join(to, 'bench-meta.json'), { force: true });
}

// --- types of the report ------------------------------------------------------------------------

interface RestartRun {
  run: number;
  /** Spawn → first 200 of /ready. */
  readyMs: number;
  /** Spawn → the server's "listening" log line (runtime start and module loading). */
  listenMs: number;
  recovery: RecoveryReport;
  /** ready − listening − recovery: worker start-up, model preload, snapshot manager. */
  otherMs: number;
  rssMiBAtReady?: number;
  hwmMiBAtReady?: number;
  /** First run only: RSS and peak RSS at least 10 s after ready (and after the graph wait). */
  rssMiBSettled?: number;
  hwmMiBSettled?: number;
  graphPendingAtReady?: number;
  /** First run only: spawn → no vector waiting for the HNSW graph; null when not within the cap. */
  graphCaughtUpMs?: number | null;
  graphPendingAtCap?: number;
  serverWarnings: string[];
  /** 1-minute load average when the run started (2 cores: above ~1 means something else was busy too). */
  load1: number;
}

interface WindowStats {
  name: string;
  /** Window bounds, ms relative to the snapshot call. */
  fromMs: number;
  toMs: number;
  /** Acknowledgement latency from the intended send time (open loop: sender delays count). */
  ackFromSchedule: Dist;
  /** Acknowledgement latency from the addContent call to its resolved promise. */
  ack: Dist;
  loopMaxGapMs: number;
  loopGapsOver20ms: number;
  loopGapsOver50ms: number;
  loopGapsOver100ms: number;
  /** The engine's background HNSW steps on the main thread (budget 5 ms each while busy, 20 ms while idle). */
  graphSteps: number;
  graphStepMaxMs: number;
  graphStepsOver50ms: number;
  /** Loop gaps over 50 ms that overlap a graph step over 50 ms. */
  loopGapsOver50msInGraphStep: number;
}

interface StallResult {
  label: string;
  rate: number;
  snapshotMs: number;
  snapshot: { seq: number; stats: SnapshotInfo['manifest']['stats']; files: { name: string; bytes: number }[] };
  windows: WindowStats[];
  worstLoopGapsDuringSnapshot: { endedAtMs: number; gapMs: number }[];
  slowestAcksDuringSnapshot: { intendedAtMs: number; latencyMs: number }[];
  writes: number;
  writeErrors: number;
  rssMiBBeforeSnapshot: number;
  peakRssMiBDuringSnapshot: number;
  /** RSS at the end of the after window (does the snapshot worker give its memory back?). */
  rssMiBAfter: number;
  /** 1-minute load average before and after the snapshot. */
  load1: { before: number; after: number };
}

// --- the benchmark --------------------------------------------------------------------------------

async function main(): Promise<void> {
  const quick = args.quick;
  const REPO_ROOT = resolve(import.meta.dir, '..');
  const OUT = join(REPO_ROOT, '.bench-out', 'snapshot');
  // Quick: a smoke test in about a minute (8k chunks keep the graph path: the threshold is 5k vectors).
  const targetChunks = Number(args.chunks ?? (quick ? 8_000 : 100_000));
  const runs = Number(args.runs ?? 3);
  const tailItems = Number(args.tail ?? (quick ? 400 : 5_000));
  const rate = Number(args.rate ?? 200);
  const graphWaitS = Number(args['graph-wait'] ?? (quick ? 0 : 180));
  const baselineMs = quick ? 2_000 : 10_000;
  const afterMs = quick ? 1_000 : 5_000;
  const parts = new Set(args.parts.split(',').map((x) => x.trim()).filter(Boolean));
  for (const part of parts) if (part !== 'restart' && part !== 'stall') throw new Error(`unknown part "${part}" (use restart, stall)`);
  const ORG = 'org_bench';
  const API_KEY = 'bench-snapshot-key-0123456789';
  const CHUNKING = { size: 1000, overlap: 100 };
  const problems: string[] = [];
  const engineLog: { level: string; message: string; details?: Record<string, unknown> }[] = [];
  const log = (level: 'info' | 'warn' | 'error', message: string, details?: Record<string, unknown>) => {
    if (level !== 'info') engineLog.push({ level, message, details });
  };
  const say = (s: string) => console.log(s);
  const t0 = performance.now();
  const elapsed = () => `${((performance.now() - t0) / 1000).toFixed(0)}s`;

  const scifact = await loadSciFact();
  if (!scifact) throw new Error('SciFact not found (../shared/eval/scifact-train or SCIFACT_DIR)');
  const corpus = scifact.corpus.map((d) => d.text);
  const itemText = (i: number) => `${corpus[i % corpus.length]!}\n\n[bench item ${i}]`;

  mkdirSync(OUT, { recursive: true });

  const stub = Bun.spawn(['bun', import.meta.path, '--stub'], { stdout: 'pipe', stderr: 'inherit', stdin: 'pipe' });
  const stubReader = stub.stdout.getReader();
  let stubBuf = '';
  let stubPort = 0;
  while (!stubPort) {
    const { done, value } = await stubReader.read();
    if (done) throw new Error('embedding stub exited before listening');
    stubBuf += new TextDecoder().decode(value);
    const m = /"port":(\d+)/.exec(stubBuf);
    if (m) stubPort = Number(m[1]);
  }
  void (async () => {
    while (!(await stubReader.read()).done);
  })();
  const stubUrl = `http://127.0.0.1:${stubPort}`;
  const compute = { documentWorkers: 2, settings: { http: { url: stubUrl } } };
  const kbConfig = textKbConfig({ provider: 'http', model: MODEL, dimensions: DIMS, metric: 'cosine', quantization: 'f32' }, { chunking: CHUNKING });

  /** Add items [from, from + count) with 500 in flight, then wait until they are indexed. */
  async function ingest(engine: Engine, kbId: string, from: number, count: number): Promise<{ ackSeconds: number; indexedSeconds: number }> {
    const started = performance.now();
    let lastReport = started;
    const progress = () => {
      if (performance.now() - lastReport < 20_000) return;
      lastReport = performance.now();
      say(`  [${elapsed()}] ${engine.stats().chunks} chunks indexed, queue ${engine.queueDepth}`);
    };
    for (let i = 0; i < count; i += 500) {
      await Promise.all(Array.from({ length: Math.min(500, count - i) }, (_, j) => engine.addContent(ORG, kbId, { text: itemText(from + i + j) })));
      progress();
    }
    const ackSeconds = (performance.now() - started) / 1000;
    while (engine.queueDepth > 0) {
      await Bun.sleep(100);
      progress();
    }
    return { ackSeconds: r2(ackSeconds), indexedSeconds: r2((performance.now() - started) / 1000) };
  }

  async function failedItems(engine: Engine, where: string): Promise<void> {
    const failed = (await engine.metrics()).contentsByStatus.failed ?? 0;
    if (failed > 0) problems.push(`${failed} items failed to index (${where})`);
  }

  try {
    say(`snapshot bench (${quick ? 'quick' : 'full'}): target ${targetChunks} chunks, ${cpus().length} cores, ${mib(totalmem())} MiB RAM, bun ${Bun.version}, load average ${loadavg().map(r2).join(' ')}`);
    say(`VECTORS: ${DIMS}-d from a HASHING STUB (feature hashing of words), NOT a neural model; embeddings server at ${stubUrl}`);

    // --- the base data directory: everything in the log, no snapshot ----------------------------
    const baseDir = join(OUT, `base-${targetChunks}`);
    const metaPath = join(baseDir, 'bench-meta.json');
    interface BaseMeta {
      kbId: string;
      items: number;
      chunks: number;
      walBytes: number;
      ingestAckSeconds: number;
      ingestIndexedSeconds: number;
    }
    let meta: BaseMeta;
    if (!args.fresh && existsSync(metaPath)) {
      meta = (await Bun.file(metaPath).json()) as BaseMeta;
      say(`reusing ${baseDir}: ${meta.items} items, ${meta.chunks} chunks (--fresh rebuilds)`);
    } else {
      rmSync(baseDir, { recursive: true, force: true });
      mkdirSync(baseDir, { recursive: true });
      // How many items give the target chunk count (the chunker is deterministic).
      let items = 0;
      let expected = 0;
      while (expected < targetChunks) expected += chunkText(itemText(items++), CHUNKING).length;
      say(`building ${baseDir}: ${items} items (~${expected} chunks) through the engine…`);
      const engine = await openBenchEngine({ dataDir: baseDir, compute, log });
      const kb = await engine.createKnowledgeBase(ORG, { name: 'snapshot bench', description: '', type: 'TEXT_HIGH_QUALITY', config: kbConfig });
      const times = await ingest(engine, kb.id, 0, items);
      await failedItems(engine, 'building the data directory');
      const chunks = engine.stats().chunks;
      await engine.close();
      meta = { kbId: kb.id, items, chunks, walBytes: dirBytes(join(baseDir, 'wal')), ingestAckSeconds: times.ackSeconds, ingestIndexedSeconds: times.indexedSeconds };
      await Bun.write(metaPath, JSON.stringify(meta, null, 2));
      say(`  [${elapsed()}] built: ${meta.chunks} chunks indexed in ${meta.ingestIndexedSeconds}s (acks ${meta.ingestAckSeconds}s), log ${mib(meta.walBytes)} MiB`);
    }

    // --- the real server, timed to /ready -----------------------------------------------------------
    const serverEnv = (dataDir: string): Record<string, string> => ({
      ...(process.env as Record<string, string>),
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      KB_API_KEYS: `${ORG}:${API_KEY}`,
      EMBEDDING_HTTP_URL: stubUrl,
      EMBEDDING_HTTP_DIMENSIONS: String(DIMS),
      // Every type on the stub: /ready then waits for no model load (a real model adds its load time).
      HIGH_QUALITY_MODEL: `http:${MODEL}`,
      COST_EFFECTIVE_MODEL: `http:${MODEL}`,
      LOG_LEVEL: 'info',
      INGEST_WORKERS: '2',
      // The server must not change the data directory between runs.
      SNAPSHOT_ON_SHUTDOWN: 'false',
      SNAPSHOT_INTERVAL_MIN: '100000',
      SNAPSHOT_LOG_MB: '1000000',
    });

    async function restartOnce(dataDir: string, run: number, waitGraphS: number): Promise<RestartRun> {
      const load1 = r2(loadavg()[0]!);
      const started = performance.now();
      const proc = Bun.spawn(['bun', join(REPO_ROOT, 'src/main.ts')], { cwd: REPO_ROOT, env: serverEnv(dataDir), stdout: 'pipe', stderr: 'pipe' });
      const warnings: string[] = [];
      const decoder = new TextDecoder();
      let port = 0;
      let listenMs = 0;
      let buf = '';
      let exited = false;
      void proc.exited.then(() => (exited = true));
      const onLine = (line: string) => {
        if (!line.trim()) return;
        try {
          const entry = JSON.parse(line) as { level?: number; msg?: string; port?: number };
          if ((entry.level ?? 0) >= 40) warnings.push(line.slice(0, 400));
          if (entry.msg === 'listening' && entry.port) {
            port = entry.port;
            listenMs = performance.now() - started;
          }
        } catch {
          warnings.push(`(stdout) ${line.slice(0, 200)}`);
        }
      };
      // Keep draining the server's stdout and stderr so it never blocks on a full pipe.
      void (async () => {
        const reader = proc.stdout.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          buf += decoder.decode(value, { stream: true });
          let nl: number;
          while ((nl = buf.indexOf('\n')) >= 0) {
            onLine(buf.slice(0, nl));
            buf = buf.slice(nl + 1);
          }
        }
      })();
      void (async () => {
        const text = await new Response(proc.stderr).text();
        for (const line of text.split('\n')) if (line.trim()) warnings.push(`(stderr) ${line.slice(0, 300)}`);
      })();
      try {
        const deadline = started + 15 * 60_000;
        while (!port) {
          if (exited) throw new Error(`server exited before listening: ${warnings.join(' | ')}`);
          if (performance.now() > deadline) throw new Error('server did not listen in time');
          await Bun.sleep(2);
        }
        let readyMs = 0;
        for (;;) {
          if (exited) throw new Error(`server exited before ready: ${warnings.join(' | ')}`);
          if (performance.now() > deadline) throw new Error('server not ready in time');
          try {
            const res = await fetch(`http://127.0.0.1:${port}/ready`);
            await res.body?.cancel();
            if (res.status === 200) {
              readyMs = performance.now() - started;
              break;
            }
          } catch {}
          await Bun.sleep(5);
        }
        const memory = procStatus(proc.pid);
        const ready = (await (await fetch(`http://127.0.0.1:${port}/ready`)).json()) as { recovery: RecoveryReport };
        const pendingNow = async (): Promise<number | undefined> => {
          const text = await fetch(`http://127.0.0.1:${port}/metrics`).then(
            (r) => r.text(),
            () => undefined,
          );
          if (text === undefined) return undefined;
          let sum = 0;
          for (const m of text.matchAll(/^kb_vectors_graph_pending\{[^}]*\} (\S+)$/gm)) sum += Number(m[1]);
          return sum;
        };
        const graphPendingAtReady = await pendingNow();
        let graphCaughtUpMs: number | null | undefined;
        let graphPendingAtCap: number | undefined;
        if (waitGraphS > 0) {
          graphCaughtUpMs = null;
          const until = performance.now() + waitGraphS * 1000;
          for (;;) {
            const p = await pendingNow();
            if (p === 0) {
              graphCaughtUpMs = Math.round(performance.now() - started);
              break;
            }
            if (performance.now() > until) {
              graphPendingAtCap = p;
              break;
            }
            await Bun.sleep(250);
          }
        }
        // First run: memory once start-up garbage is gone (at least 10 s after ready).
        let settled: { rssMiB?: number; hwmMiB?: number } | undefined;
        if (run === 1) {
          const wait = started + readyMs + 10_000 - performance.now();
          if (wait > 0) await Bun.sleep(wait);
          settled = procStatus(proc.pid);
        }
        return {
          run,
          readyMs: Math.round(readyMs),
          listenMs: Math.round(listenMs),
          recovery: ready.recovery,
          otherMs: Math.round(readyMs - listenMs - ready.recovery.millis),
          rssMiBAtReady: memory.rssMiB,
          hwmMiBAtReady: memory.hwmMiB,
          rssMiBSettled: settled?.rssMiB,
          hwmMiBSettled: settled?.hwmMiB,
          graphPendingAtReady,
          graphCaughtUpMs,
          graphPendingAtCap,
          serverWarnings: warnings,
          load1,
        };
      } finally {
        proc.kill('SIGTERM');
        const code = await proc.exited;
        if (code !== 0) warnings.push(`server exit code ${code}`);
      }
    }

    async function restarts(label: string, dataDir: string): Promise<RestartRun[]> {
      const out: RestartRun[] = [];
      for (let run = 1; run <= runs; run++) {
        const r = await restartOnce(dataDir, run, run === 1 ? graphWaitS : 0);
        out.push(r);
        const snap = r.recovery.snapshot;
        say(
          `  [${elapsed()}] ${label} run ${run}: ready ${r.readyMs} ms (listening ${r.listenMs} ms, recovery ${r.recovery.millis} ms` +
            `${snap ? ` of which snapshot ${snap.millis} ms / ${snap.records} records` : ''}, other ${r.otherMs} ms), ` +
            `${r.recovery.records} log records replayed, ${r.recovery.chunks} chunks, RSS ${r.rssMiBAtReady} MiB, graph pending at ready ${r.graphPendingAtReady}, load ${r.load1}` +
            (r.graphCaughtUpMs === undefined ? '' : r.graphCaughtUpMs === null ? `, graph NOT caught up within ${graphWaitS}s (pending ${r.graphPendingAtCap})` : `, graph caught up ${r.graphCaughtUpMs} ms after spawn`) +
            (r.rssMiBSettled === undefined ? '' : `; later RSS ${r.rssMiBSettled} MiB, peak ${r.hwmMiBSettled} MiB`),
        );
        for (const w of r.serverWarnings) say(`    server: ${w}`);
      }
      return out;
    }

    // --- 1a: log replay only ---------------------------------------------------------------------
    let replayRuns: RestartRun[] | undefined;
    if (parts.has('restart')) {
      say(`\n1a. restart by log replay only (${mib(meta.walBytes)} MiB of log)`);
      replayRuns = await restarts('log replay', baseDir);
    }

    // --- 1b / 1c: a snapshot (log truncated), then a log tail after it --------------------------------
    // The directory is kept (with snap-meta.json) so `--parts stall` can start from it later.
    const snapDir = join(OUT, `snap-${targetChunks}`);
    const snapMetaPath = join(snapDir, 'snap-meta.json');
    interface SnapMeta {
      tailItems: number;
      idleSnapshotMs: number;
      verifyMs: number;
      seq: number;
      manifest: SnapshotInfo['manifest'];
      logSegmentsRemoved: number;
      logBytesAfterTruncate: number;
      inProcessReplay: RecoveryReport;
      inProcessSnapshotOpen: RecoveryReport;
      tailChunks: number;
      tailLogBytes: number;
      tailIndexSeconds: number;
    }
    let snapMeta: SnapMeta | undefined;
    let snapshotRuns: RestartRun[] | undefined;
    let tailRuns: RestartRun[] | undefined;
    const reuseSnap = !parts.has('restart') && existsSync(snapMetaPath) && !args.fresh;
    if (reuseSnap) {
      snapMeta = (await Bun.file(snapMetaPath).json()) as SnapMeta;
      if (snapMeta.tailItems !== tailItems) snapMeta = undefined;
    }
    if (snapMeta) {
      say(`\nreusing ${snapDir} (snapshot seq ${snapMeta.seq} + ${snapMeta.tailItems}-item tail)`);
    } else {
      copyDir(baseDir, snapDir);
      say(`\n1b. ${parts.has('restart') ? 'restart from' : 'preparing'} a snapshot (copy at ${snapDir})`);
      let engine = await openBenchEngine({ dataDir: snapDir, compute, log });
      const inProcessReplay = engine.recovery;
      let s = performance.now();
      const idleSnap = await snapshotsOf(engine).snapshot();
      const idleSnapshotMs = Math.round(performance.now() - s);
      const logSegmentsRemoved = await engine.truncateLog(idleSnap.seq);
      const logBytesAfterTruncate = await engine.logBytes();
      await engine.close();
      // Start-up checks every file of the snapshot (SHA-256) before loading it: that part alone.
      s = performance.now();
      const verified = await verifySnapshot(idleSnap.dir);
      const verifyMs = Math.round(performance.now() - s);
      if (!verified.ok) problems.push(`the snapshot just written fails its own check: ${verified.reason}`);
      say(
        `  [${elapsed()}] in-process log replay ${inProcessReplay.millis} ms; snapshot (seq ${idleSnap.seq}, engine otherwise idle) took ${idleSnapshotMs} ms: ` +
          `${idleSnap.manifest.stats.chunks} chunks, ${idleSnap.manifest.stats.records} records; ${logSegmentsRemoved} log segments removed, ${mib(logBytesAfterTruncate)} MiB of log left; ` +
          `verifying its checksums alone takes ${verifyMs} ms; load ${r2(loadavg()[0]!)}`,
      );
      if (parts.has('restart')) snapshotRuns = await restarts('snapshot', snapDir);

      if (parts.has('restart')) say(`\n1c. restart from a snapshot plus a log tail of ${tailItems} items`);
      engine = await openBenchEngine({ dataDir: snapDir, compute, log });
      const inProcessSnapshotOpen = engine.recovery;
      const chunksBeforeTail = engine.stats().chunks;
      const tailTimes = await ingest(engine, meta.kbId, meta.items, tailItems);
      await failedItems(engine, 'adding the tail');
      const tailChunks = engine.stats().chunks - chunksBeforeTail;
      const tailLogBytes = await engine.logBytes();
      await engine.close();
      say(`  [${elapsed()}] in-process open from the snapshot ${inProcessSnapshotOpen.millis} ms; tail: ${tailItems} items, ${tailChunks} chunks in ${tailTimes.indexedSeconds}s, log ${mib(tailLogBytes)} MiB`);
      if (parts.has('restart')) tailRuns = await restarts('snapshot+tail', snapDir);
      snapMeta = {
        tailItems,
        idleSnapshotMs,
        verifyMs,
        seq: idleSnap.seq,
        manifest: idleSnap.manifest,
        logSegmentsRemoved,
        logBytesAfterTruncate,
        inProcessReplay,
        inProcessSnapshotOpen,
        tailChunks,
        tailLogBytes,
        tailIndexSeconds: tailTimes.indexedSeconds,
      };
      await Bun.write(snapMetaPath, JSON.stringify(snapMeta, null, 2));
    }

    // --- 2: writes while snapshots are taken -------------------------------------------------------
    let stallFull: StallResult | undefined;
    let stallIncremental: StallResult | undefined;
    let mainGraphBuildMs = 0;
    let pendingAfterReplay = 0;
    let tailGraphBuildMs = 0;
    let pendingAfterSnapshotOpen = 0;
    if (parts.has('stall')) {
      // Items streamed here are numbered far above the base and the tail (their text must be unique).
      let nextItem = 10_000_000;
      const nextText = () => itemText(nextItem++);
      /** Build the main thread's pending HNSW vectors flat out (the server does it in the background: 5 ms of every 25 ms while serving, 20 ms while idle). */
      const catchUp = async (vectors: VectorIndex): Promise<number> => {
        const s = performance.now();
        while (!vectors.buildStep(200, 256)) await Bun.sleep(0);
        return Math.round(performance.now() - s);
      };

      // (i) The first snapshot of a data directory that has none: its graph is built from scratch.
      const stallDir = join(OUT, `stall-${targetChunks}`);
      copyDir(baseDir, stallDir);
      say(`\n2. writes at ${rate}/s during snapshots (in process)`);
      say(`  first snapshot: copy of the log-only directory at ${stallDir}`);
      let engine = await openBenchEngine({ dataDir: stallDir, compute, log });
      let vectors = engine.knowledgeBase(meta.kbId)?.vectors;
      if (!vectors) throw new Error('knowledge base or its vectors missing after replay');
      pendingAfterReplay = vectors.graphPending;
      mainGraphBuildMs = await catchUp(vectors);
      say(`  [${elapsed()}] main-thread HNSW graph of ${pendingAfterReplay} vectors built flat out in ${mainGraphBuildMs} ms (the server's background build runs at 1/5 of that pace while serving, 4/5 while idle)`);
      Bun.gc(true);
      let probe = new StallProbe(engine, vectors, ORG, meta.kbId, rate, nextText);
      stallFull = await probe.around('first (full: graph from scratch)', baselineMs, afterMs);
      say(probe.describe(stallFull));
      while (engine.queueDepth > 0) await Bun.sleep(100);
      await failedItems(engine, 'the write stream');
      if (probe.errors.length > 0) problems.push(`${probe.errors.length} addContent calls failed during the stall test: ${probe.errors[0]}`);
      await engine.close();
      rmSync(stallDir, { recursive: true, force: true });

      // (ii) A later snapshot: continues the previous one (its graph re-used) with the log tail after it.
      if (!quick) {
        const incDir = join(OUT, `stall-inc-${targetChunks}`);
        copyDir(snapDir, incDir);
        rmSync(join(incDir, 'snap-meta.json'), { force: true });
        say(`  incremental snapshot: copy of the snapshot + ${tailItems}-item tail directory at ${incDir}`);
        engine = await openBenchEngine({ dataDir: incDir, compute, log });
        vectors = engine.knowledgeBase(meta.kbId)?.vectors;
        if (!vectors) throw new Error('knowledge base or its vectors missing after opening from the snapshot');
        pendingAfterSnapshotOpen = vectors.graphPending;
        tailGraphBuildMs = await catchUp(vectors);
        say(`  [${elapsed()}] opened from the snapshot in ${engine.recovery.millis} ms; ${pendingAfterSnapshotOpen} tail vectors added to the graph in ${tailGraphBuildMs} ms`);
        Bun.gc(true);
        probe = new StallProbe(engine, vectors, ORG, meta.kbId, rate, nextText);
        stallIncremental = await probe.around('incremental (previous snapshot + tail)', baselineMs, afterMs);
        say(probe.describe(stallIncremental));
        while (engine.queueDepth > 0) await Bun.sleep(100);
        await failedItems(engine, 'the write stream');
        if (probe.errors.length > 0) problems.push(`${probe.errors.length} addContent calls failed during the stall test: ${probe.errors[0]}`);
        await engine.close();
        rmSync(incDir, { recursive: true, force: true });
      }
    }

    // --- 3: sizes -----------------------------------------------------------------------------------
    // What the base log (before any compaction) holds, by kind.
    const breakdown = { frames: 0, frameHeaderBytes: 0, putJsonBytes: 0, indexedJsonBytes: 0, vectorBytes: 0, otherBytes: 0 };
    const walDir = join(baseDir, 'wal');
    for (const name of readdirSync(walDir).sort()) {
      const bytes = new Uint8Array(await Bun.file(join(walDir, name)).arrayBuffer());
      for (const f of scanFrames(bytes).frames) {
        breakdown.frames++;
        breakdown.frameHeaderBytes += FRAME_HEADER;
        const { record, attachment } = decodePayload<LogRecord>(f.payload);
        const json = f.payload.length - attachment.length;
        if (record.t === 'content.put') breakdown.putJsonBytes += json;
        else if (record.t === 'content.indexed') {
          breakdown.indexedJsonBytes += json;
          breakdown.vectorBytes += attachment.length;
        } else breakdown.otherBytes += f.payload.length;
      }
    }
    const perChunk = (b: number, chunks: number) => r1(b / chunks);
    const manifest = snapMeta.manifest;
    const recordsBytes = manifest.files.find((f) => f.name === 'records.log')?.bytes ?? 0;
    const graphBytes = manifest.files.filter((f) => f.name.startsWith('graph-')).reduce((n, f) => n + f.bytes, 0);
    const snapChunks = manifest.stats.chunks;
    const sizes = {
      chunks: meta.chunks,
      logBytes: meta.walBytes,
      logBytesPerChunk: perChunk(meta.walBytes, meta.chunks),
      logFrames: breakdown.frames,
      logBreakdownPerChunk: {
        contentPutJson: perChunk(breakdown.putJsonBytes, meta.chunks),
        contentIndexedJson: perChunk(breakdown.indexedJsonBytes, meta.chunks),
        vectors: perChunk(breakdown.vectorBytes, meta.chunks),
        frameHeaders: perChunk(breakdown.frameHeaderBytes, meta.chunks),
        other: perChunk(breakdown.otherBytes, meta.chunks),
      },
      snapshot: {
        seq: manifest.seq,
        chunks: snapChunks,
        records: manifest.stats.records,
        recordsLogBytes: recordsBytes,
        recordsLogBytesPerChunk: perChunk(recordsBytes, snapChunks),
        graphBytes,
        graphBytesPerChunk: perChunk(graphBytes, snapChunks),
        totalBytesPerChunk: perChunk(recordsBytes + graphBytes, snapChunks),
        graphs: manifest.graphs,
      },
    };

    // --- report -------------------------------------------------------------------------------------
    const restartRows = (label: string, rs: RestartRun[] | undefined) =>
      (rs ?? []).map((r) => [
        r.run === 1 ? label : '',
        r.run,
        r.readyMs,
        r.listenMs,
        r.recovery.millis,
        r.recovery.snapshot ? r.recovery.snapshot.millis : '-',
        r.otherMs,
        r.recovery.snapshot ? r.recovery.snapshot.records : '-',
        r.recovery.records,
        r.recovery.chunks,
        r.rssMiBAtReady ?? '?',
        r.rssMiBSettled === undefined ? '' : `${r.rssMiBSettled} / ${r.hwmMiBSettled}`,
        r.graphPendingAtReady ?? '?',
        r.graphCaughtUpMs === undefined ? '' : r.graphCaughtUpMs === null ? `>${graphWaitS} (${r.graphPendingAtCap} left)` : r1(r.graphCaughtUpMs / 1000),
        r.load1,
      ]);
    const windowRows = (st: StallResult | undefined) =>
      (st?.windows ?? []).map((w) => [
        w.name === 'before' ? st!.label.split(' ')[0]! : '',
        w.name,
        `${w.fromMs}..${w.toMs}`,
        w.ackFromSchedule.n,
        w.ackFromSchedule.p50,
        w.ackFromSchedule.p99,
        w.ackFromSchedule.max,
        w.ack.max,
        w.loopMaxGapMs,
        w.loopGapsOver50ms,
        w.loopGapsOver100ms,
        w.graphStepMaxMs,
        `${w.loopGapsOver50msInGraphStep}/${w.loopGapsOver50ms}`,
      ]);
    say('\n=== results ===');
    say(`VECTORS: ${DIMS}-d f32 from a HASHING STUB over HTTP (feature hashing of words), NOT a neural model.`);
    say(`Knowledge base: ${meta.items} items (SciFact train abstracts, replicated, unique tag each), ${meta.chunks} chunks at ${CHUNKING.size}/${CHUNKING.overlap} chars; HNSW M=16, efAdd=128.`);
    say(`Build through the engine: ${meta.ingestIndexedSeconds}s to index (acks ${meta.ingestAckSeconds}s); log ${mib(meta.walBytes)} MiB.\n`);
    if (parts.has('restart')) {
      say(`1. Restart: spawn of \`bun src/main.ts\` → first 200 of /ready, ms (target from a snapshot: < 5000 ms)`);
      say(
        table(
          ['scenario', 'run', 'ready', 'listen', 'recovery', 'of it snapshot', 'other', 'snap records', 'log records', 'chunks', 'RSS MiB', 'later RSS/peak', 'graph pending', 'graph s', 'load'],
          [...restartRows('a log replay', replayRuns), ...restartRows('b snapshot', snapshotRuns), ...restartRows(`c snapshot+${tailItems} tail`, tailRuns)],
        ),
      );
      say(
        `  listen: spawn → "listening" log line; recovery / of it snapshot: the engine's own numbers from /ready; other = ready − listen − recovery\n` +
          `  (worker start-up, model preload, snapshot manager); RSS at ready; later RSS/peak: first run, ≥ 10 s after ready (VmRSS / VmHWM);\n` +
          `  graph pending: vectors not yet in the HNSW graph at ready (searched exactly meanwhile); graph s: first run, spawn → graph\n` +
          `  caught up (cap ${graphWaitS}s${graphWaitS === 0 ? ', not measured' : ''}); load: 1-minute load average at spawn (2 cores).\n`,
      );
    }
    say(
      `  In process: log replay ${snapMeta.inProcessReplay.millis} ms; open from the snapshot ${snapMeta.inProcessSnapshotOpen.millis} ms (snapshot part ${snapMeta.inProcessSnapshotOpen.snapshot?.millis} ms).\n` +
        `  Snapshot taken with the engine otherwise idle (its own background graph build aside): ${snapMeta.idleSnapshotMs} ms, graph built from scratch in the\n` +
        `  snapshot worker; its SHA-256 check at start-up alone: ${snapMeta.verifyMs} ms.\n`,
    );
    if (stallFull) {
      say(`2. Writes: open loop at ${rate} addContent/s (full abstracts, indexed meanwhile) before, during and after a snapshot`);
      say(
        table(
          ['snapshot', 'window', 'ms', 'acks', 'p50', 'p99', 'max', 'call→ack max', 'loop max gap', 'gaps>50', 'gaps>100', 'graph step max', 'gaps>50 in step'],
          [...windowRows(stallFull), ...windowRows(stallIncremental)],
        ),
      );
      say(
        `  ack latencies (ms) from the intended send time; call→ack from the addContent call. loop: largest gap between ticks of a\n` +
          `  1 ms setInterval. graph step: the engine's background HNSW step on the main thread (budget 5 ms; this process never reports idle); gaps>50 in step: loop gaps\n` +
          `  over 50 ms that overlap a graph step over 50 ms.\n` +
          `  first snapshot: ${stallFull.snapshotMs} ms (${stallFull.snapshot.stats.chunks} chunks), RSS ${stallFull.rssMiBBeforeSnapshot} → peak ${stallFull.peakRssMiBDuringSnapshot} → ${stallFull.rssMiBAfter} MiB, load ${stallFull.load1.before} → ${stallFull.load1.after};\n` +
          (stallIncremental
            ? `  incremental snapshot: ${stallIncremental.snapshotMs} ms (${stallIncremental.snapshot.stats.chunks} chunks), RSS ${stallIncremental.rssMiBBeforeSnapshot} → peak ${stallIncremental.peakRssMiBDuringSnapshot} → ${stallIncremental.rssMiBAfter} MiB, load ${stallIncremental.load1.before} → ${stallIncremental.load1.after}.\n`
            : `  incremental snapshot: not measured in --quick.\n`) +
          `  main-thread HNSW build after replay, flat out: ${mainGraphBuildMs} ms for ${pendingAfterReplay} vectors` +
          (stallIncremental ? `; after opening from the snapshot: ${tailGraphBuildMs} ms for the ${pendingAfterSnapshotOpen} tail vectors.\n` : '.\n'),
      );
    }
    say(`3. Size per chunk (bytes; snapshot of ${snapChunks} chunks)`);
    say(
      table(
        ['what', 'bytes', 'per chunk'],
        [
          ['log before compaction', meta.walBytes, sizes.logBytesPerChunk],
          ['  content.put JSON (text)', breakdown.putJsonBytes, sizes.logBreakdownPerChunk.contentPutJson],
          ['  content.indexed JSON', breakdown.indexedJsonBytes, sizes.logBreakdownPerChunk.contentIndexedJson],
          ['  vectors (attachments)', breakdown.vectorBytes, sizes.logBreakdownPerChunk.vectors],
          ['  frame headers', breakdown.frameHeaderBytes, sizes.logBreakdownPerChunk.frameHeaders],
          ['snapshot records.log', recordsBytes, sizes.snapshot.recordsLogBytesPerChunk],
          ['snapshot HNSW graph', graphBytes, sizes.snapshot.graphBytesPerChunk],
          ['snapshot total', recordsBytes + graphBytes, sizes.snapshot.totalBytesPerChunk],
        ],
      ),
    );

    // Anything that looks wrong.
    if (snapshotRuns && replayRuns) {
      const snapReady = snapshotRuns.map((r) => r.readyMs);
      if (Math.max(...snapReady) >= 5000) problems.push(`restart from a snapshot took up to ${Math.max(...snapReady)} ms to /ready (target < 5000 ms)`);
      const replayReady = Math.min(...replayRuns.map((r) => r.readyMs));
      if (Math.min(...snapReady) > replayReady) problems.push(`restart from a snapshot (${Math.min(...snapReady)} ms best) is slower to /ready than log replay (${replayReady} ms best)`);
      const first = snapshotRuns[0]!;
      if (first.hwmMiBSettled !== undefined && first.rssMiBSettled !== undefined && first.hwmMiBSettled > 1.4 * first.rssMiBSettled) {
        problems.push(`restart from a snapshot peaks at ${first.hwmMiBSettled} MiB RSS for a steady ${first.rssMiBSettled} MiB (start-up transient; log replay peaked at ${replayRuns[0]!.hwmMiBSettled} MiB)`);
      }
    }
    if (recordsBytes >= 0.95 * meta.walBytes) problems.push(`the snapshot's records.log is ${perChunk(recordsBytes, snapChunks)} B/chunk vs ${sizes.logBytesPerChunk} B/chunk in the log: compaction saves nothing for insert-only data, and loading it is the same replay`);
    for (const st of [stallFull, stallIncremental]) {
      if (!st) continue;
      const [before, during] = st.windows;
      if (during!.loopMaxGapMs > Math.max(50, 2 * before!.loopMaxGapMs)) problems.push(`event loop stalled ${during!.loopMaxGapMs} ms during the ${st.label} snapshot (before it: ${before!.loopMaxGapMs} ms)`);
      if (during!.ackFromSchedule.max > Math.max(100, 2 * before!.ackFromSchedule.max)) problems.push(`write acks reached ${during!.ackFromSchedule.max} ms during the ${st.label} snapshot (before it: ${before!.ackFromSchedule.max} ms)`);
      if (before!.graphStepMaxMs > 50 || during!.graphStepMaxMs > 50) problems.push(`background HNSW steps on the main thread ran up to ${Math.max(before!.graphStepMaxMs, during!.graphStepMaxMs)} ms (budget 5 ms) around the ${st.label} snapshot`);
    }
    for (const e of engineLog) problems.push(`engine ${e.level}: ${e.message} ${e.details ? JSON.stringify(e.details).slice(0, 300) : ''}`);
    for (const r of [...(replayRuns ?? []), ...(snapshotRuns ?? []), ...(tailRuns ?? [])]) for (const w of r.serverWarnings) problems.push(`server: ${w}`);
    say(problems.length ? `\nLooks wrong:\n${problems.map((p) => `  - ${p}`).join('\n')}` : '\nNothing looked wrong.');

    const result = {
      bench: 'snapshot',
      mode: quick ? 'quick' : 'full',
      parts: [...parts],
      date: new Date().toISOString(),
      machine: { cores: cpus().length, memMiB: mib(totalmem()), bun: Bun.version, loadAtEnd: loadavg().map(r2) },
      vectors: `${DIMS}-d f32 from a hashing stub (feature hashing of words + per-text noise) served over HTTP; NOT a neural model`,
      corpus: 'scifact-train abstracts, replicated with a unique tag per item',
      chunking: CHUNKING,
      hnsw: kbConfig.hnsw,
      base: meta,
      restart: {
        note: 'ms from spawning `bun src/main.ts` to the first 200 of /ready; recovery = engine.recovery as /ready reports it',
        logReplay: replayRuns,
        snapshot: snapshotRuns,
        snapshotPlusTail: tailRuns,
        graphWaitS,
      },
      snapshotPrep: snapMeta,
      stall: stallFull
        ? {
            rate,
            mainThreadGraphBuildMs: mainGraphBuildMs,
            mainThreadGraphVectors: pendingAfterReplay,
            tailGraphBuildMs,
            tailGraphVectors: pendingAfterSnapshotOpen,
            first: stallFull,
            incremental: stallIncremental,
          }
        : undefined,
      sizes,
      problems,
      engineLog,
      totalSeconds: Math.round((performance.now() - t0) / 1000),
    };
    if (args.json) {
      await Bun.write(resolve(args.json), JSON.stringify(result, null, 2));
      say(`\nwrote ${resolve(args.json)}`);
    }
    say(`total ${elapsed()}`);
  } finally {
    stub.kill();
    await stub.exited;
  }
}

/**
 * An open-loop write stream, an event-loop monitor and a timer on the engine's background graph
 * steps, around one `snapshotsOf(engine).snapshot()` call.
 */
class StallProbe {
  errors: string[] = [];

  constructor(
    private readonly engine: Engine,
    private readonly vectors: VectorIndex,
    private readonly org: string,
    private readonly kbId: string,
    private readonly rate: number,
    private readonly nextText: () => string,
  ) {}

  async around(label: string, baselineMs: number, afterMs: number): Promise<StallResult> {
    const { engine, vectors } = this;
    // The engine calls vectors.buildStep(10) from its graph timer; time each call (instance only).
    const steps: { from: number; to: number }[] = [];
    const original = vectors.buildStep;
    vectors.buildStep = function (this: VectorIndex, budgetMs: number, batch?: number): boolean {
      const from = performance.now();
      try {
        return original.call(this, budgetMs, batch);
      } finally {
        steps.push({ from, to: performance.now() });
      }
    };

    const gaps: { at: number; gap: number }[] = [];
    let lastTick = performance.now();
    const monitor = setInterval(() => {
      const now = performance.now();
      gaps.push({ at: now, gap: now - lastTick });
      lastTick = now;
    }, 1);
    const rssSamples: { at: number; rss: number }[] = [];
    const rssTimer = setInterval(() => rssSamples.push({ at: performance.now(), rss: process.memoryUsage().rss }), 100);

    const writes: { intended: number; sent: number; acked?: number }[] = [];
    const streamStart = performance.now();
    let issued = 0;
    let inflight = 0;
    let streamOn = true;
    const sender = setInterval(() => {
      if (!streamOn) return;
      const due = Math.floor(((performance.now() - streamStart) * this.rate) / 1000);
      while (issued < due && inflight < 5000) {
        const w: (typeof writes)[number] = { intended: streamStart + (issued * 1000) / this.rate, sent: performance.now() };
        writes.push(w);
        issued++;
        inflight++;
        engine
          .addContent(this.org, this.kbId, { text: this.nextText() })
          .then(
            () => {
              w.acked = performance.now();
            },
            (err) => {
              this.errors.push(String(err));
            },
          )
          .finally(() => inflight--);
      }
    }, 2);

    try {
      await Bun.sleep(baselineMs);
      const rssBefore = process.memoryUsage().rss;
      const loadBefore = r2(loadavg()[0]!);
      const snapStart = performance.now();
      const snap = await snapshotsOf(engine).snapshot();
      const snapEnd = performance.now();
      await Bun.sleep(afterMs);
      const rssAfter = process.memoryUsage().rss;
      streamOn = false;
      const streamEnd = performance.now();
      clearInterval(sender);
      while (inflight > 0) await Bun.sleep(10);

      const windowOf = (name: string, from: number, to: number): WindowStats => {
        const ws = writes.filter((w) => w.intended >= from && w.intended < to && w.acked !== undefined);
        const gs = gaps.filter((g) => g.at >= from && g.at < to);
        const ss = steps.filter((x) => x.to >= from && x.from < to);
        const longSteps = ss.filter((x) => x.to - x.from > 50);
        const bigGaps = gs.filter((g) => g.gap > 50);
        return {
          name,
          fromMs: Math.round(from - snapStart),
          toMs: Math.round(to - snapStart),
          ackFromSchedule: dist(ws.map((w) => w.acked! - w.intended)),
          ack: dist(ws.map((w) => w.acked! - w.sent)),
          loopMaxGapMs: r2(Math.max(0, ...gs.map((g) => g.gap))),
          loopGapsOver20ms: gs.filter((g) => g.gap > 20).length,
          loopGapsOver50ms: bigGaps.length,
          loopGapsOver100ms: gs.filter((g) => g.gap > 100).length,
          graphSteps: ss.length,
          graphStepMaxMs: r2(Math.max(0, ...ss.map((x) => x.to - x.from))),
          graphStepsOver50ms: longSteps.length,
          loopGapsOver50msInGraphStep: bigGaps.filter((g) => longSteps.some((x) => x.from < g.at && x.to > g.at - g.gap)).length,
        };
      };
      const rssDuring = rssSamples.filter((x) => x.at >= snapStart && x.at <= snapEnd).map((x) => x.rss);
      return {
        label,
        rate: this.rate,
        snapshotMs: Math.round(snapEnd - snapStart),
        snapshot: { seq: snap.seq, stats: snap.manifest.stats, files: snap.manifest.files.map((f) => ({ name: f.name, bytes: f.bytes })) },
        windows: [windowOf('before', streamStart + 500, snapStart), windowOf('during', snapStart, snapEnd), windowOf('after', snapEnd, streamEnd)],
        worstLoopGapsDuringSnapshot: gaps
          .filter((g) => g.at >= snapStart && g.at <= snapEnd)
          .sort((a, b) => b.gap - a.gap)
          .slice(0, 5)
          .map((g) => ({ endedAtMs: Math.round(g.at - snapStart), gapMs: r2(g.gap) })),
        slowestAcksDuringSnapshot: writes
          .filter((w) => w.acked !== undefined && w.intended >= snapStart && w.intended <= snapEnd)
          .sort((a, b) => b.acked! - b.intended - (a.acked! - a.intended))
          .slice(0, 5)
          .map((w) => ({ intendedAtMs: Math.round(w.intended - snapStart), latencyMs: r2(w.acked! - w.intended) })),
        writes: writes.length,
        writeErrors: this.errors.length,
        rssMiBBeforeSnapshot: mib(rssBefore),
        peakRssMiBDuringSnapshot: mib(Math.max(rssBefore, ...rssDuring)),
        load1: { before: loadBefore, after: r2(loadavg()[0]!) },
        rssMiBAfter: mib(rssAfter),
      };
    } finally {
      streamOn = false;
      clearInterval(sender);
      clearInterval(monitor);
      clearInterval(rssTimer);
      vectors.buildStep = original;
    }
  }

  describe(st: StallResult): string {
    const [before, during] = st.windows;
    return (
      `  ${st.label}: snapshot seq ${st.snapshot.seq} (${st.snapshot.stats.chunks} chunks) took ${st.snapshotMs} ms with ${st.writes} writes streamed; ` +
      `acks max ${before!.ackFromSchedule.max} ms before vs ${during!.ackFromSchedule.max} ms during; loop gap max ${before!.loopMaxGapMs} vs ${during!.loopMaxGapMs} ms\n` +
      `    worst loop gaps during: ${st.worstLoopGapsDuringSnapshot.map((g) => `${g.gapMs} ms @${g.endedAtMs}`).join(', ')}\n` +
      `    slowest acks during: ${st.slowestAcksDuringSnapshot.map((a) => `${a.latencyMs} ms @${a.intendedAtMs}`).join(', ')}\n` +
      `    RSS ${st.rssMiBBeforeSnapshot} MiB before, peak ${st.peakRssMiBDuringSnapshot} MiB during, ${st.rssMiBAfter} MiB after; load average ${st.load1.before} before, ${st.load1.after} after`
    );
  }
}

// Last, so every constant above is initialized before either path runs.
if (args.stub) runStub();
else await main();
