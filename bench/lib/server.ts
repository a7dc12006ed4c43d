// The real server (`bun src/main.ts`) as a child process of a benchmark: spawned with its
// environment, its output drained for its whole life (so it never blocks on a full pipe), polled
// until a route answers, stopped. The one launcher of every benchmark. With BENCH_CPU_PROF=<dir>
// the server writes a CPU profile of its main thread there when it exits; with
// BENCH_SERVER_LOG=<file> its output lines are appended to that file as well.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { followOutput, portOf } from '../../support/output';
import { REPO_ROOT } from './paths';

export interface ServerOptions {
  /** Environment on top of this process's (DATA_DIR, keys, models…). */
  env: Record<string, string>;
  /**
   * 'warn' (the default) hides the info-level {"msg":"listening","port":…} line, so a free port
   * is chosen here; at 'info' the server takes any port (PORT=0) and the line tells which.
   */
  logLevel?: 'warn' | 'info';
  /** Output lines kept in `lines` (default 200). */
  keep?: number;
  /** Every output line, as it arrives. */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** At 'info', how long to wait for the "listening" line (default 15 minutes: a long replay). */
  listenTimeoutMs?: number;
}

export interface Server {
  pid: number;
  port: number;
  base: string;
  /** performance.now() just before the spawn: readiness is timed from it. */
  spawnedAt: number;
  /** Spawn → the "listening" line, ms (runtime start and module loading; NaN at 'warn'). */
  listenMs: number;
  /** The first `keep` lines of output. */
  lines: string[];
  exited: Promise<number>;
  /** The exit code once the process has exited, undefined while it runs. */
  exitCode: () => number | undefined;
  signalCode: () => string | null;
  /** Whether stop() was called: an exit before that is the server's own. */
  stopping: () => boolean;
  /** SIGTERM, SIGKILL if still running after `graceMs`; resolves with the milliseconds it took. */
  stop: (graceMs?: number) => Promise<number>;
}

/** A port free right now on 127.0.0.1. */
function freePort(): number {
  const s = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

/** Spawn the server; resolves once its port is known (not once it answers: see waitFor). */
export async function launchServer(options: ServerOptions): Promise<Server> {
  const logLevel = options.logLevel ?? 'warn';
  const chosen = logLevel === 'info' ? 0 : freePort();
  const spawnedAt = performance.now();
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const proc = Bun.spawn(['bun', ...profile, join(REPO_ROOT, 'src/main.ts')], {
    cwd: REPO_ROOT,
    env: { ...process.env, LOG_LEVEL: logLevel, HOST: '127.0.0.1', PORT: String(chosen), ...options.env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  let exitCode: number | undefined;
  let stopping = false;
  const exited = proc.exited.then((code) => (exitCode = code));
  const logFile = process.env.BENCH_SERVER_LOG;
  const onLine = logFile
    ? (line: string, stream: 'stdout' | 'stderr') => {
        appendFileSync(logFile, `${line}\n`);
        options.onLine?.(line, stream);
      }
    : options.onLine;
  const output = followOutput(proc, options.keep ?? 200, onLine);
  let port = chosen;
  let listenMs = NaN;
  if (chosen === 0) {
    try {
      port = await portOf(output, exited, options.listenTimeoutMs ?? 15 * 60_000);
    } catch (err) {
      proc.kill('SIGKILL');
      throw err;
    }
    listenMs = performance.now() - spawnedAt;
  }
  return {
    pid: proc.pid,
    port,
    base: `http://127.0.0.1:${port}`,
    spawnedAt,
    listenMs,
    lines: output.lines,
    exited,
    exitCode: () => exitCode,
    signalCode: () => (proc.signalCode === null ? null : String(proc.signalCode)),
    stopping: () => stopping,
    stop: async (graceMs = 120_000) => {
      stopping = true;
      const t = performance.now();
      if (exitCode === undefined) {
        proc.kill('SIGTERM');
        let timer: ReturnType<typeof setTimeout> | undefined;
        const done = await Promise.race([exited.then(() => true), new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), graceMs)))]);
        clearTimeout(timer);
        if (!done) proc.kill('SIGKILL');
        await exited;
      }
      return performance.now() - t;
    },
  };
}

/**
 * Poll GET `path` every `intervalMs` until it answers 200; resolves with the milliseconds since
 * the spawn. Throws when the server exits first, or (killing it) when `timeoutMs` since the spawn
 * pass.
 */
export async function waitFor(server: Server, path: string, { intervalMs = 10, timeoutMs = 600_000 } = {}): Promise<number> {
  const tail = () => server.lines.slice(-20).join('\n');
  for (;;) {
    const code = server.exitCode();
    if (code !== undefined) throw new Error(`server exited (${code}) before ${path} answered:\n${tail()}`);
    const status = await fetch(`${server.base}${path}`).then(
      (r) => (void r.body?.cancel(), r.status),
      () => 0,
    );
    if (status === 200) return performance.now() - server.spawnedAt;
    if (performance.now() - server.spawnedAt > timeoutMs) {
      await server.stop(0);
      throw new Error(`server did not answer ${path} within ${Math.round(timeoutMs / 1000)} s:\n${tail()}`);
    }
    await Bun.sleep(intervalMs);
  }
}
