// The server as a function (src/server.ts): what the process around it (src/start.ts) relies on.
// Fatal errors reach an in-process caller as a rejection or through onFatal, never as an exit of
// this process; stop() lets go of the port and the data directory.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/logger';
import { createServer, ServerFatalError } from '../src/server';
import { addContent, createKb, InProcessServer, KEY, ORG } from './helpers/server';

let server: InProcessServer;
beforeAll(async () => {
  server = await InProcessServer.start();
});
afterAll(async () => {
  await server?.stop();
  server?.cleanup();
});

/** A configuration from these variables only, with a data directory of its own. */
function configOf(env: Record<string, string>) {
  return loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: InProcessServer.tempDir(), KB_API_KEYS: `${ORG}:${KEY}`, INGEST_WORKERS: '1', ...env });
}

/** A logger keeping its lines, so this file's output stays quiet. */
function quietLogger(lines: string[] = []) {
  return createLogger('info', { write: (line: string) => void lines.push(line) });
}

describe('loadConfig', () => {
  test('reads the variables it is given, not process.env', () => {
    const config = loadConfig({ PORT: '4321', DATA_DIR: '/srv/kb', LOG_LEVEL: 'warn' });
    expect(config.port).toBe(4321);
    expect(config.dataDir).toBe('/srv/kb');
    expect(config.logLevel).toBe('warn');
    expect(loadConfig({}).port).toBe(3000);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow('PORT must be an integer');
  });
});

describe('fatal errors', () => {
  test('a taken port rejects createServer with one line saying so, and is told to onFatal', async () => {
    const taken = Number(new URL(server.url).port);
    const told: ServerFatalError[] = [];
    const config = configOf({ PORT: String(taken) });
    const failed = await createServer(config, { logger: quietLogger(), onFatal: (error) => told.push(error) }).catch((err) => err);
    expect(failed).toBeInstanceOf(ServerFatalError);
    expect(failed.message).toBe(`cannot listen: port ${taken} on 127.0.0.1 is already in use (is another server running?); stop it or set PORT`);
    expect(told).toEqual([failed]);
    // The server that holds the port is untouched.
    expect((await server.api('GET', '/health')).status).toBe(200);
  });

  test('a recovery failure rejects `ready` after the server stopped, and logs one fatal line', async () => {
    const config = configOf({});
    // The write-ahead log's folder is a file: the log cannot be opened.
    mkdirSync(config.dataDir, { recursive: true });
    writeFileSync(join(config.dataDir, 'wal'), 'not a folder');
    const lines: string[] = [];
    const handle = await createServer(config, { logger: quietLogger(lines) });
    const failed = await handle.ready.then(
      () => undefined,
      (err) => err,
    );
    expect(failed).toBeInstanceOf(ServerFatalError);
    expect(failed.message).toBe('recovery failed');
    const fatal = lines.map((l) => JSON.parse(l)).filter((l) => l.level === 60);
    expect(fatal.map((l) => l.msg)).toEqual(['recovery failed']);
    expect(lines.at(-1)).toContain('"msg":"stopped"');
    expect(
      await fetch(`${handle.url}/health`).then(
        () => 'answered',
        () => 'refused',
      ),
    ).toBe('refused');
  });
});

describe('stop', () => {
  test('lets go of the port, and a new server on the same data directory has the data', async () => {
    const first = await InProcessServer.start();
    const kb = await createKb(first);
    await addContent(first, kb, 'a heron waits by the river');
    expect(await first.stop()).toBe(0);
    expect(first.output.at(-1)).toContain('"msg":"stopped"');
    expect(
      await fetch(`${first.url}/health`).then(
        () => 'answered',
        () => 'refused',
      ),
    ).toBe('refused');
    // stop() twice is one stop.
    expect(await first.stop()).toBe(0);
    const second = await InProcessServer.start({ dataDir: first.dataDir });
    try {
      const hits = await second.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query: 'heron' });
      expect(hits.status).toBe(200);
      expect(hits.body.data.map((h: { contentChunk: string }) => h.contentChunk)).toEqual(['a heron waits by the river']);
    } finally {
      await second.stop();
      second.cleanup();
    }
  });
});

describe('stop during indexing', () => {
  test('a batch being embedded finishes before its worker is stopped (stopping it inside ONNX Runtime aborted the process); the items are indexed after a restart', async () => {
    const first = await InProcessServer.start();
    const kb = await createKb(first);
    const texts = Array.from({ length: 40 }, (_, i) => `item ${i}: ${'the quick brown fox jumps over the lazy dog. '.repeat(40)} unique${i}`);
    const added = await Promise.all(texts.map((text) => first.api('POST', `/api/v1/knowledge-bases/${kb}/contents`, { text })));
    expect(added.map((r) => r.status)).toEqual(texts.map(() => 201));
    const metrics = (await first.api('GET', '/metrics')).body as string;
    expect(Number(/kb_ingestion_queue_depth (\d+)/.exec(metrics)?.[1])).toBeGreaterThan(0);
    expect(await first.stop()).toBe(0);
    const second = await InProcessServer.start({ dataDir: first.dataDir });
    try {
      let ready = 0;
      for (let i = 0; i < 600 && ready < texts.length; i++) {
        const res = await second.api('GET', `/api/v1/knowledge-bases/${kb}`);
        ready = res.body.data.ingestion.contents.ready ?? 0;
        if (ready < texts.length) await Bun.sleep(100);
      }
      expect(ready).toBe(texts.length);
    } finally {
      await second.stop();
      second.cleanup();
    }
  }, 120_000);
});
