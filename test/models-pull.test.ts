// Models on demand (engine/embedding/hub.ts, `bun run models`), never against the real hub: a
// local HTTP server serves the real MiniLM model of ../shared/models in the hub's URL layout
// (`/<id>/resolve/<rev>/<file>`; large files redirect to a "CDN" path, the hub's answer carrying
// their size and SHA-256 as X-Linked-Size and X-Linked-Etag, as huggingface.co does). Covered: a
// pull whose files load and embed, resume after a connection cut mid-file (HTTP Range), a corrupt
// download refused by its checksum, files already present kept, a wrong id, offline failing at
// once with the folder to fill by hand, and the CLI (progress, list, exit codes, no stack traces).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { listModels, ModelPullError, pullModel } from '../engine';
import { createTransformersProvider } from '../engine/embedding/providers/transformers';
import { freePort } from './helpers/s3';
import { addContent, createKb, TestServer } from './helpers/server';

const ROOT = resolve(import.meta.dir, '..');
const SOURCE = resolve(ROOT, '..', 'shared', 'models');
const ID = 'Xenova/all-MiniLM-L6-v2';
const work = mkdtempSync(join(tmpdir(), 'kb-models-'));

interface HubBehaviour {
  /** Cut the connection after this many bytes of the next GET of this file. */
  cutNext?: { file: string; after: number };
  /** Serve these bytes instead of the file's (its checksum headers stay the real ones). */
  corrupt?: string;
}

const hub = { url: '', gets: [] as { file: string; range: string | null }[], behaviour: {} as HubBehaviour };
let server: ReturnType<typeof Bun.serve>;

function sha256(path: string): string {
  return new Bun.CryptoHasher('sha256').update(readFileSync(path)).digest('hex');
}

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(req) {
      const url = new URL(req.url);
      const resolveMatch = /^\/([^/]+\/[^/]+)\/resolve\/main\/(.+)$/.exec(url.pathname);
      const cdnMatch = /^\/cdn\/([^/]+\/[^/]+)\/(.+)$/.exec(url.pathname);
      const [, id, file] = (resolveMatch ?? cdnMatch ?? []) as string[];
      if (!id || !file) return new Response('not found', { status: 404 });
      const path = join(SOURCE, id, file);
      if (!existsSync(path)) return new Response('Entry not found', { status: 404 });
      const size = statSync(path).size;
      // Large files live on the CDN: the hub answers with a redirect that carries their checksum.
      if (resolveMatch && file.startsWith('onnx/')) {
        return new Response(null, {
          status: 302,
          headers: { location: `/cdn/${id}/${file}`, 'x-linked-size': String(size), 'x-linked-etag': `"${sha256(path)}"` },
        });
      }
      if (req.method === 'HEAD') return new Response(null, { headers: { 'content-length': String(size) } });
      hub.gets.push({ file, range: req.headers.get('range') });
      let bytes: Uint8Array = new Uint8Array(readFileSync(path));
      if (hub.behaviour.corrupt === file) {
        bytes = new Uint8Array(bytes);
        bytes[bytes.length >> 1]! ^= 0xff;
        hub.behaviour.corrupt = undefined;
      }
      const range = /^bytes=(\d+)-$/.exec(req.headers.get('range') ?? '');
      const from = range ? Number(range[1]) : 0;
      if (from >= bytes.length && range) return new Response(null, { status: 416 });
      const body = bytes.subarray(from);
      const cut = hub.behaviour.cutNext?.file === file ? hub.behaviour.cutNext.after : undefined;
      const headers = { 'content-length': String(body.length), ...(range ? { 'content-range': `bytes ${from}-${bytes.length - 1}/${bytes.length}` } : {}) };
      if (cut === undefined) return new Response(body, { status: range ? 206 : 200, headers });
      hub.behaviour.cutNext = undefined;
      // The transfer stops after `cut` bytes (a dropped connection, as the client sees it).
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(body.subarray(0, cut));
          controller.close();
        },
      });
      return new Response(stream, { status: range ? 206 : 200, headers });
    },
  });
  hub.url = `http://127.0.0.1:${server.port}`;
});

afterAll(() => {
  server?.stop(true);
  rmSync(work, { recursive: true, force: true });
});

describe('pullModel against a hub-layout server', () => {
  test('downloads a model whose files load and embed; a second pull keeps what is there', async () => {
    const modelDir = join(work, 'a');
    hub.gets.length = 0;
    const progress: number[] = [];
    const { dir, files } = await pullModel(ID, {
      modelDir,
      hubUrl: hub.url,
      dtypes: ['int8'],
      onProgress: (p) => p.file.endsWith('.onnx') && progress.push(p.received),
    });
    expect(dir).toBe(join(modelDir, 'Xenova', 'all-MiniLM-L6-v2'));
    expect(files.map((f) => f.name).sort()).toEqual([
      'config.json',
      'onnx/model_quantized.onnx',
      'special_tokens_map.json',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    expect(files.find((f) => f.name.endsWith('.onnx'))!.sha256).toBe(sha256(join(SOURCE, ID, 'onnx/model_quantized.onnx')));
    expect(progress.at(-1)).toBe(statSync(join(SOURCE, ID, 'onnx/model_quantized.onnx')).size);
    expect(readdirSync(join(dir, 'onnx')).some((n) => n.endsWith('.part'))).toBe(false);

    const provider = await createTransformersProvider(
      { provider: 'transformers', model: ID, dimensions: 384, pooling: 'mean', maxTokens: 256 },
      { modelDir, threads: 1 },
    );
    const [vector] = await provider.embed(['a walrus on the ice'], 'document');
    expect(vector!.length).toBe(384);

    hub.gets.length = 0;
    const again = await pullModel(ID, { modelDir, hubUrl: hub.url, dtypes: ['int8'] });
    expect(again.files.every((f) => f.present)).toBe(true);
    expect(hub.gets).toEqual([]);
    expect(listModels(modelDir)).toEqual([{ id: ID, dir, bytes: expect.any(Number), dtypes: ['int8'], missing: [] }]);
  }, 120_000);

  test('a connection cut mid-file fails with a resumable error; the next pull continues with a Range request', async () => {
    const modelDir = join(work, 'b');
    const file = 'onnx/model_quantized.onnx';
    hub.behaviour.cutNext = { file, after: 5_000_000 };
    let caught: unknown;
    try {
      await pullModel(ID, { modelDir, hubUrl: hub.url, dtypes: ['int8'] });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ModelPullError);
    expect(String((caught as Error).message)).toContain('again to resume');
    const part = join(modelDir, ID, `${file}.part`);
    const kept = statSync(part).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(5_000_000);
    expect(existsSync(join(modelDir, ID, file))).toBe(false);

    hub.gets.length = 0;
    const resumed: number[] = [];
    await pullModel(ID, { modelDir, hubUrl: hub.url, dtypes: ['int8'], onProgress: (p) => p.file === file && resumed.push(p.resumedFrom) });
    expect(hub.gets.filter((g) => g.file === file)).toEqual([{ file, range: `bytes=${kept}-` }]);
    expect(resumed[0]).toBe(kept);
    expect(sha256(join(modelDir, ID, file))).toBe(sha256(join(SOURCE, ID, file)));
    expect(existsSync(part)).toBe(false);
  }, 120_000);

  test('a download that does not match its SHA-256 is removed, never installed', async () => {
    const modelDir = join(work, 'c');
    hub.behaviour.corrupt = 'onnx/model_quantized.onnx';
    await expect(pullModel(ID, { modelDir, hubUrl: hub.url, dtypes: ['int8'] })).rejects.toThrow('SHA-256');
    expect(existsSync(join(modelDir, ID, 'onnx/model_quantized.onnx'))).toBe(false);
    expect(existsSync(join(modelDir, ID, 'onnx/model_quantized.onnx.part'))).toBe(false);
    expect(listModels(modelDir)[0]?.missing).toEqual(['onnx/model.onnx or onnx/model_quantized.onnx']);
  }, 60_000);

  test('a wrong id, a malformed id and an unreachable hub fail at once, naming the folder to fill by hand', async () => {
    const modelDir = join(work, 'd');
    await expect(pullModel('Xenova/no-such-model', { modelDir, hubUrl: hub.url })).rejects.toThrow(
      `copy its files into ${join(modelDir, 'Xenova', 'no-such-model')}/`,
    );
    await expect(pullModel('../etc', { modelDir, hubUrl: hub.url })).rejects.toThrow('<org>/<name>');
    const closed = await freePort();
    const started = performance.now();
    await expect(pullModel(ID, { modelDir, hubUrl: `http://127.0.0.1:${closed}` })).rejects.toThrow(`Cannot reach the model hub at http://127.0.0.1:${closed}`);
    expect(performance.now() - started).toBeLessThan(5000);
  });
});

describe('bun run models', () => {
  // Asynchronous: the hub answers from this process.
  const run = async (args: string[], env: Record<string, string>) => {
    const proc = Bun.spawn(['bun', join(ROOT, 'src/models.ts'), ...args], {
      cwd: work,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, ...env },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { code, out, err };
  };

  test('pull shows progress and installs; list shows size, weights and the types that use it; offline exits 1 without a stack trace', async () => {
    const modelDir = join(work, 'cli');
    const env = { EMBEDDING_MODEL_DIR: modelDir, EMBEDDING_HUB_URL: hub.url, HIGH_QUALITY_MODEL: `transformers:${ID}` };
    const pulled = await run(['pull', ID, '--dtype', 'int8'], env);
    expect({ code: pulled.code, err: pulled.err.slice(-300) }).toMatchObject({ code: 0 });
    expect(pulled.err).toMatch(/\[#{24}\] 100% .*onnx\/model_quantized\.onnx/);
    expect(pulled.out).toContain(`${ID} → ${join(modelDir, 'Xenova', 'all-MiniLM-L6-v2')}: 5 files`);

    const listed = await run(['list'], env);
    expect(listed.code).toBe(0);
    // EMBEDDING_MODEL_DIR is searched before the shipped model's folder: its copy serves every type (the cost-effective default is the shipped model).
    expect(listed.out).toMatch(new RegExp(`${ID}\\s+\\d+\\.\\d MB\\s+int8\\s+used by: TEXT_COST_EFFECTIVE, TEXT_HIGH_QUALITY, TEXT_AND_MEDIA_HIGH_QUALITY\n`));
    expect(listed.out).toMatch(new RegExp(`${ID}\\s+\\d+\\.\\d MB\\s+int8\\s+used by: no type\\s+\\(shipped with the server\\)`));
    expect(listed.out).toContain('universal-sentence-encoder-lite');

    const closedEnv = { ...env, EMBEDDING_HUB_URL: 'http://127.0.0.1:9', EMBEDDING_MODEL_DIR: join(work, 'offline') };
    const offline = await run(['pull', 'Xenova/bge-small-en-v1.5'], closedEnv);
    expect(offline.code).toBe(1);
    expect(offline.err).toContain(`copy its files into ${join(work, 'offline', 'Xenova', 'bge-small-en-v1.5')}/`);
    expect(offline.err).not.toContain('    at ');

    const usage = await run(['pull'], env);
    expect(usage.code).toBe(2);
    expect(usage.err).toContain('usage:');
  }, 120_000);
});

describe('the server with EMBEDDING_ALLOW_REMOTE=true', () => {
  // fp32: the int8 export ships with the server (in its own folder), so only the fp32 one is pulled.
  const serverEnv = (modelDir: string, hubUrl: string, precision = 'fp32') => ({
    EMBEDDING_ALLOW_REMOTE: 'true',
    EMBEDDING_HUB_URL: hubUrl,
    EMBEDDING_MODEL_DIR: modelDir,
    HIGH_QUALITY_MODEL: `transformers:${ID}`,
    EMBEDDING_PRECISION: precision,
  });

  test('pulls the configured model at first start, before /ready, and serves with it; a later start needs no hub', async () => {
    const modelDir = join(work, 'server');
    const gets = hub.gets.length;
    const server = await TestServer.start({ env: serverEnv(modelDir, hub.url) });
    try {
      const log = server.output.join('\n');
      expect(log).toContain('pulling the configured embedding model');
      expect(log).toContain('embedding model pulled');
      expect(hub.gets.slice(gets).map((g) => g.file)).toContain('onnx/model.onnx');
      expect(sha256(join(modelDir, ID, 'onnx/model.onnx'))).toBe(sha256(join(SOURCE, ID, 'onnx/model.onnx')));
      const kbId = await createKb(server, 'pulled', 'TEXT_HIGH_QUALITY');
      const configuration = await server.api('GET', `/api/v1/knowledge-bases/${kbId}/configuration`);
      expect(configuration.body.data.embedding).toMatchObject({ provider: 'transformers', model: ID, precision: 'fp32' });
      const cat = await addContent(server, kbId, 'The cat sat on the mat and purred in the afternoon sun.');
      await addContent(server, kbId, 'Quarterly revenue grew by twelve percent on strong export sales.');
      const found = await server.api('POST', `/api/v1/knowledge-bases/${kbId}/search/semantic`, { query: 'a kitten resting on a rug', limit: 1 });
      expect(found.status).toBe(200);
      expect(found.body.data[0].contentId).toBe(cat);
    } finally {
      await server.kill9();
    }
    // Started again with the hub gone: the files on disk serve, nothing is asked of the hub.
    const again = await TestServer.start({ dataDir: server.dataDir, env: serverEnv(modelDir, `http://127.0.0.1:${await freePort()}`) });
    try {
      expect(again.output.join('\n')).not.toContain('pulling the configured embedding model');
      expect((await again.api('GET', '/ready')).status).toBe(200);
    } finally {
      await again.kill9();
      again.cleanup();
    }
  }, 120_000);

  test('an unreachable hub stops the first start with the folder to fill by hand', async () => {
    const modelDir = join(work, 'server-offline');
    const dataDir = TestServer.tempDir();
    const proc = Bun.spawn(['bun', join(ROOT, 'src/main.ts')], {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, ...serverEnv(modelDir, `http://127.0.0.1:${await freePort()}`) },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    rmSync(dataDir, { recursive: true, force: true });
    expect(code).toBe(1);
    expect(out + err).toContain('the configured embedding model could not be pulled');
    expect(out + err).toContain(`copy its files into ${join(modelDir, 'Xenova', 'all-MiniLM-L6-v2')}/`);
  }, 60_000);

  test('a configured export the shipped model already has (int8) is not pulled: the start needs no hub', async () => {
    const modelDir = join(work, 'server-shipped');
    const gets = hub.gets.length;
    const server = await TestServer.start({ env: serverEnv(modelDir, `http://127.0.0.1:${await freePort()}`, 'int8') });
    try {
      expect(server.output.join('\n')).not.toContain('pulling the configured embedding model');
      expect(hub.gets.length).toBe(gets);
      expect(existsSync(modelDir)).toBe(false);
      const kbId = await createKb(server, 'shipped', 'TEXT_HIGH_QUALITY');
      expect((await server.api('GET', `/api/v1/knowledge-bases/${kbId}/configuration`)).body.data.embedding).toMatchObject({ model: ID, precision: 'int8' });
    } finally {
      await server.stop();
      server.cleanup();
    }
  }, 60_000);
});
