// Starts the real server on a free port with its own data directory, and talks to it over HTTP.
// Two ways, with the same face:
// - TestServer: the server as a child process (`bun src/main.ts`), for tests where the process is
//   the point: crash (kill -9), restart, signals, exit codes, memory, a second process.
// - InProcessServer: createServer() (src/server.ts) inside the test process: no process start, no
//   module loading per server. Its log lines are kept in `output` as the child's are.
// Bun runs every test file of one `bun test` in one process, so in-process servers share it: stop
// each one (afterAll), and leave process-wide settings (umask, process.env, signal handlers) alone.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { followOutput, portOf } from './output';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/logger';
import { createServer, type ServerHandle } from '../src/server';

const ROOT = join(import.meta.dir, '..');

export const ORG = 'org_test';
export const KEY = 'test-key-0123456789';
export const OTHER_ORG = 'org_other';
export const OTHER_KEY = 'other-key-9876543210';

export interface StartOptions {
  dataDir?: string;
  env?: Record<string, string>;
  /** Wait for /ready (default true). */
  waitReady?: boolean;
}

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** The environment both kinds of test server start with (then the test's own variables). */
function serverEnv(dataDir: string, env: Record<string, string> = {}): Record<string, string | undefined> {
  return {
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    KB_API_KEYS: `${ORG}:${KEY},${OTHER_ORG}:${OTHER_KEY}`,
    INGEST_WORKERS: '1',
    LOG_LEVEL: 'info',
    ...env,
  };
}

/** Directories tempDir() made and nothing removed yet (removeTempDirs). */
const madeDirs = new Set<string>();

/**
 * Remove every directory tempDir() made so far: test/setup.ts does after each test file, whose
 * servers are stopped by then (its own afterAll hooks run first). A directory handed to a process
 * the test did not clean up after (an admin command, a server expected to refuse to start) goes too.
 */
export function removeTempDirs(): void {
  for (const dir of madeDirs) rmSync(dir, { recursive: true, force: true });
  madeDirs.clear();
}

/** What a test does with a running server, however it runs. */
export abstract class RunningServer {
  protected constructor(
    readonly url: string,
    readonly dataDir: string,
    /** Its log, one JSON line each. */
    readonly output: string[],
  ) {}

  /** A data directory of its own, under the system's temporary folder (removed after the test file: removeTempDirs). */
  static tempDir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'kb-test-'));
    madeDirs.add(dir);
    return dir;
  }

  /** Resolves with the milliseconds waited once /ready answers 200. */
  abstract waitReady(timeoutMs?: number): Promise<number>;

  /** Graceful stop; resolves with the exit code (0 for an in-process server that stopped cleanly). */
  abstract stop(): Promise<number>;

  async api<T = any>(
    method: string,
    path: string,
    body?: unknown,
    auth: { org?: string; key?: string } | null = { org: ORG, key: KEY },
    extraHeaders: Record<string, string> = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...extraHeaders };
    if (auth?.org !== undefined) headers['x-service-organization-id'] = auth.org;
    if (auth?.key !== undefined) headers['x-service-api-key'] = auth.key;
    let payload: string | undefined;
    if (typeof body === 'string') {
      payload = body;
      headers['content-type'] ??= 'application/json';
    } else if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['content-type'] = 'application/json';
    }
    const res = await fetch(`${this.url}${path}`, { method, headers, body: payload });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  /** Wait until the server has logged a line containing `text` (its output is read asynchronously). */
  async waitForOutput(text: string, timeoutMs = 5000): Promise<boolean> {
    const started = performance.now();
    while (performance.now() - started < timeoutMs) {
      if (this.output.some((l) => l.includes(text))) return true;
      await Bun.sleep(10);
    }
    return false;
  }

  cleanup(): void {
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** The server as a child process. */
export class TestServer extends RunningServer {
  private constructor(
    readonly proc: Subprocess<'ignore', 'pipe', 'pipe'>,
    url: string,
    dataDir: string,
    output: string[],
  ) {
    super(url, dataDir, output);
  }

  static async start(options: StartOptions = {}): Promise<TestServer> {
    const dataDir = options.dataDir ?? TestServer.tempDir();
    const proc = Bun.spawn(['bun', join(ROOT, 'src/main.ts')], {
      cwd: ROOT,
      env: serverEnv(dataDir, options.env),
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const followed = followOutput(proc, Infinity);
    const output = followed.lines;
    const port = await portOf(followed, proc.exited, 30_000);
    const server = new TestServer(proc, `http://127.0.0.1:${port}`, dataDir, output);
    if (options.waitReady !== false) {
      // A server that never gets ready must not outlive the test that gave up on it.
      await server.waitReady().catch(async (err) => {
        proc.kill('SIGKILL');
        await proc.exited;
        throw err;
      });
    }
    return server;
  }

  async waitReady(timeoutMs = 60_000): Promise<number> {
    const started = performance.now();
    while (performance.now() - started < timeoutMs) {
      try {
        const res = await fetch(`${this.url}/ready`);
        if (res.status === 200) return performance.now() - started;
      } catch {}
      await Bun.sleep(20);
    }
    throw new Error(`server not ready after ${timeoutMs} ms:\n${this.output.join('\n')}`);
  }

  /** Graceful stop (SIGTERM) and wait for exit. */
  async stop(): Promise<number> {
    this.proc.kill('SIGTERM');
    return await this.proc.exited;
  }

  /** Crash: SIGKILL, no chance to flush anything. */
  async kill9(): Promise<void> {
    this.proc.kill('SIGKILL');
    await this.proc.exited;
  }
}

/** The server inside the test process (createServer), with the same environment as TestServer's. */
export class InProcessServer extends RunningServer {
  private constructor(
    readonly handle: ServerHandle,
    dataDir: string,
    output: string[],
  ) {
    super(handle.url, dataDir, output);
  }

  static async start(options: StartOptions = {}): Promise<InProcessServer> {
    const dataDir = options.dataDir ?? InProcessServer.tempDir();
    const config = loadConfig(serverEnv(dataDir, options.env));
    const output: string[] = [];
    // Its own logger, writing to `output` (pino hands over one line, with its newline, per write).
    const logger = createLogger(config.logLevel, { write: (line: string) => void output.push(line.trimEnd()) });
    let handle: ServerHandle;
    try {
      handle = await createServer(config, { logger });
    } catch (err) {
      throw new Error(`server did not start: ${err instanceof Error ? err.message : String(err)}\n${output.join('\n')}`);
    }
    const server = new InProcessServer(handle, dataDir, output);
    if (options.waitReady !== false) {
      // A server that never gets ready would go on running in this process, under later tests.
      await server.waitReady().catch(async (err) => {
        await handle.stop('not ready');
        throw err;
      });
    }
    return server;
  }

  async waitReady(timeoutMs = 60_000): Promise<number> {
    const started = performance.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`server not ready after ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.handle.ready, timeout]);
    } catch (err) {
      throw new Error(`${err instanceof Error ? err.message : String(err)}:\n${this.output.join('\n')}`);
    } finally {
      clearTimeout(timer);
    }
    return performance.now() - started;
  }

  /** Graceful stop, as SIGTERM does in a server process. */
  async stop(): Promise<number> {
    await this.handle.stop('test');
    return 0;
  }
}

/** Create a knowledge base and return its id. */
export async function createKb(server: RunningServer, name = 'Test KB', type = 'TEXT_HIGH_QUALITY'): Promise<string> {
  const res = await server.api('POST', '/api/v1/knowledge-bases', { name, type });
  if (res.status !== 201) throw new Error(`create kb failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.id;
}

/** Add text content, waiting until it is indexed. */
export async function addContent(server: RunningServer, kbId: string, text: string, metadata?: Record<string, unknown>): Promise<string> {
  const res = await server.api('POST', `/api/v1/knowledge-bases/${kbId}/contents?wait=true`, metadata ? { text, metadata } : { text });
  if (res.status !== 201) throw new Error(`add content failed: ${res.status} ${JSON.stringify(res.body)}`);
  if (res.body.data.status !== 'ready') throw new Error(`content not ready: ${JSON.stringify(res.body)}`);
  return res.body.data.id;
}
