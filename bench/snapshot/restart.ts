// bench/snapshot.ts, part 1: time from spawning the real server (`bun src/main.ts`) to the first
// 200 of /ready, with the engine's own recovery report, memory at ready and after, and how long the
// HNSW graph takes to catch up.
import { loadavg } from 'node:os';
import type { RecoveryReport } from '../../engine';
import { HASH_DIMENSIONS, HASH_MODEL } from '../lib/hash-embed';
import { procStatusBytes } from '../lib/memory';
import { metricSum, tryScrapeMetrics } from '../lib/metrics';
import { launchServer, waitFor } from '../lib/server';
import type { BenchContext } from './context';
import { API_KEY, graphWaitS, ORG, runs } from './options';
import { mib, round2 } from './units';

export interface RestartRun {
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

const serverEnv = (stubUrl: string, dataDir: string): Record<string, string> => ({
  DATA_DIR: dataDir,
  KB_API_KEYS: `${ORG}:${API_KEY}`,
  EMBEDDING_HTTP_URL: stubUrl,
  EMBEDDING_HTTP_DIMENSIONS: String(HASH_DIMENSIONS),
  // Every type on the stub: /ready then waits for no model load (a real model adds its load time).
  HIGH_QUALITY_MODEL: `http:${HASH_MODEL}`,
  COST_EFFECTIVE_MODEL: `http:${HASH_MODEL}`,
  INGEST_WORKERS: '2',
  // The server must not change the data directory between runs.
  SNAPSHOT_ON_SHUTDOWN: 'false',
  SNAPSHOT_INTERVAL_MIN: '100000',
  SNAPSHOT_LOG_MB: '1000000',
});

/** RSS and peak RSS of a process, MiB. */
function procMemoryMiB(pid: number): { rssMiB?: number; hwmMiB?: number } {
  const inMiB = (bytes: number | undefined) => (bytes === undefined ? undefined : mib(bytes));
  return { rssMiB: inMiB(procStatusBytes(pid, 'VmRSS')), hwmMiB: inMiB(procStatusBytes(pid, 'VmHWM')) };
}

async function restartOnce(stubUrl: string, dataDir: string, run: number, waitGraphS: number): Promise<RestartRun> {
  const load1 = round2(loadavg()[0]!);
  const warnings: string[] = [];
  const server = await launchServer({
    env: serverEnv(stubUrl, dataDir),
    logLevel: 'info',
    onLine: (line, stream) => {
      if (!line.trim()) return;
      if (stream === 'stderr') {
        warnings.push(`(stderr) ${line.slice(0, 300)}`);
        return;
      }
      try {
        const entry = JSON.parse(line) as { level?: number };
        if ((entry.level ?? 0) >= 40) warnings.push(line.slice(0, 400));
      } catch {
        warnings.push(`(stdout) ${line.slice(0, 200)}`);
      }
    },
  });
  try {
    const readyMs = await waitFor(server, '/ready', { intervalMs: 5, timeoutMs: 15 * 60_000 });
    const memory = procMemoryMiB(server.pid);
    const ready = (await (await fetch(`${server.base}/ready`)).json()) as { recovery: RecoveryReport };
    const pendingNow = async (): Promise<number | undefined> => {
      const metrics = await tryScrapeMetrics(server.base);
      return metrics && metricSum(metrics, 'kb_vectors_graph_pending');
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
          graphCaughtUpMs = Math.round(performance.now() - server.spawnedAt);
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
      const wait = server.spawnedAt + readyMs + 10_000 - performance.now();
      if (wait > 0) await Bun.sleep(wait);
      settled = procMemoryMiB(server.pid);
    }
    return {
      run,
      readyMs: Math.round(readyMs),
      listenMs: Math.round(server.listenMs),
      recovery: ready.recovery,
      otherMs: Math.round(readyMs - server.listenMs - ready.recovery.millis),
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
    await server.stop();
    const code = await server.exited;
    if (code !== 0) warnings.push(`server exit code ${code}`);
  }
}

/** `runs` restarts on `dataDir`, each printed as it ends; the first waits for the graph. */
export async function restarts({ say, elapsed, stubUrl }: BenchContext, label: string, dataDir: string): Promise<RestartRun[]> {
  const out: RestartRun[] = [];
  for (let run = 1; run <= runs; run++) {
    const r = await restartOnce(stubUrl, dataDir, run, run === 1 ? graphWaitS : 0);
    out.push(r);
    const snap = r.recovery.snapshot;
    say(
      `  [${elapsed()}] ${label} run ${run}: ready ${r.readyMs} ms (listening ${r.listenMs} ms, recovery ${r.recovery.millis} ms` +
        `${snap ? ` of which snapshot ${snap.millis} ms / ${snap.records} records` : ''}, other ${r.otherMs} ms), ` +
        `${r.recovery.records} log records replayed, ${r.recovery.chunks} chunks, RSS ${r.rssMiBAtReady} MiB, graph pending at ready ${r.graphPendingAtReady}, load ${r.load1}` +
        (r.graphCaughtUpMs === undefined
          ? ''
          : r.graphCaughtUpMs === null
            ? `, graph NOT caught up within ${graphWaitS}s (pending ${r.graphPendingAtCap})`
            : `, graph caught up ${r.graphCaughtUpMs} ms after spawn`) +
        (r.rssMiBSettled === undefined ? '' : `; later RSS ${r.rssMiBSettled} MiB, peak ${r.hwmMiBSettled} MiB`),
    );
    for (const w of r.serverWarnings) say(`    server: ${w}`);
  }
  return out;
}
