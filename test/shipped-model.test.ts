// The sentence-transformer that ships in the repository (models/Xenova/all-MiniLM-L6-v2, int8):
// a server started with no environment at all, from a folder that is not the checkout (so
// ./models, the default EMBEDDING_MODEL_DIR, is empty), serves all three types with it and finds a
// paraphrase that shares no word with its page; `models list` says so; USE-Lite still serves when
// it is asked for, with its warning. Resolution: the shipped folder is searched after
// EMBEDDING_MODEL_DIR, so an fp32 export placed there wins (EMBEDDING_PRECISION=fp32 by default).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Subprocess } from 'bun';
import { analyze } from '../engine';
import { loadConfig } from '../src/config';
import { resolveModel, typeEmbeddings } from '../src/kb-types';
import { SHIPPED_MODEL_FILES, SHIPPED_MODEL_ID, shippedModelDir } from '../src/shipped-model';
import { followOutput, portOf } from './helpers/output';

const ROOT = resolve(import.meta.dir, '..');
const ORG = 'org_shipped';
const KEY = 'shipped-key-0123456789';
const HEADERS = { 'x-service-organization-id': ORG, 'x-service-api-key': KEY };
const TYPES = ['TEXT_COST_EFFECTIVE', 'TEXT_HIGH_QUALITY', 'TEXT_AND_MEDIA_HIGH_QUALITY'];
const work = mkdtempSync(join(tmpdir(), 'kb-shipped-'));

/** Only what a user would have: PATH and HOME (plus a port, a data directory and a key to call it with). */
function bareEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, TMPDIR: tmpdir(), ...extra };
}

class Server {
  private constructor(
    readonly proc: Subprocess<'ignore', 'pipe', 'pipe'>,
    readonly url: string,
    readonly output: string[],
  ) {}

  static async start(env: Record<string, string> = {}): Promise<Server> {
    const cwd = mkdtempSync(join(work, 'cwd-'));
    const proc = Bun.spawn(['bun', join(ROOT, 'src/main.ts')], {
      cwd,
      env: bareEnv({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: join(cwd, 'data'), KB_API_KEYS: `${ORG}:${KEY}`, INGEST_WORKERS: '1', ...env }),
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const followed = followOutput(proc, Infinity);
    const server = new Server(proc, `http://127.0.0.1:${await portOf(followed, proc.exited, 30_000)}`, followed.lines);
    for (const started = Date.now(); Date.now() - started < 60_000; await Bun.sleep(20)) {
      if ((await fetch(`${server.url}/ready`).catch(() => undefined))?.status === 200) return server;
    }
    throw new Error(`not ready:\n${server.output.join('\n')}`);
  }

  async api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: body === undefined ? HEADERS : { ...HEADERS, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json().catch(() => null) };
  }

  async createKb(type: string): Promise<string> {
    const res = await this.api('POST', '/api/v1/knowledge-bases', { name: `shipped ${type}`, type });
    expect(res.status).toBe(201);
    return res.body.data.id;
  }

  /** Parsed JSON log lines with this message. */
  logged(msg: string): any[] {
    return this.output.filter((l) => l.includes(`"msg":"${msg}"`)).map((l) => JSON.parse(l));
  }

  async stop(): Promise<void> {
    this.proc.kill('SIGTERM');
    await this.proc.exited;
  }
}

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the shipped model in the repository', () => {
  test('is exactly the int8 export with its tokenizer and config, a license and a README, under 30 MB', () => {
    const dir = join(ROOT, 'models', SHIPPED_MODEL_ID);
    expect(shippedModelDir()).toBe(join(ROOT, 'models'));
    for (const file of [...SHIPPED_MODEL_FILES, 'LICENSE', 'README.md'])
      expect({ file, present: existsSync(join(dir, file)) }).toEqual({ file, present: true });
    expect(statSync(join(dir, 'onnx', 'model_quantized.onnx')).size).toBeLessThan(30 * 1024 * 1024);
    expect(Bun.spawnSync(['git', 'check-ignore', '-q', join(dir, 'onnx', 'model_quantized.onnx')], { cwd: ROOT }).exitCode).toBe(1); // tracked
    expect(Bun.spawnSync(['git', 'check-ignore', '-q', join(dir, 'onnx', 'model.onnx')], { cwd: ROOT }).exitCode).toBe(0); // a pulled fp32 export is not
    expect(Bun.spawnSync(['git', 'check-ignore', '-q', join(ROOT, 'models', 'Xenova', 'bge-small-en-v1.5', 'config.json')], { cwd: ROOT }).exitCode).toBe(0);
  });
});

describe('a fresh server with no environment', () => {
  let server: Server;
  beforeAll(async () => {
    server = await Server.start();
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
  });

  test('serves all three types with the shipped all-MiniLM-L6-v2 (int8), without warnings', async () => {
    expect(server.logged('embedding model serves types')).toEqual([
      expect.objectContaining({ model: SHIPPED_MODEL_ID, provider: 'transformers', dimensions: 384, types: TYPES, quantization: ['i8', 'f32', 'f32'] }),
    ]);
    expect(server.output.join('\n')).not.toContain('universal-sentence-encoder-lite');
    const ready = await fetch(`${server.url}/ready`).then((r) => r.json() as Promise<any>);
    expect(ready.warnings).toEqual([]);
    for (const type of TYPES) {
      const id = await server.createKb(type);
      const config = await server.api('GET', `/api/v1/knowledge-bases/${id}/configuration`);
      expect(config.body.data.embedding).toEqual({
        provider: 'transformers',
        model: SHIPPED_MODEL_ID,
        dimensions: 384,
        pooling: 'mean',
        maxTokens: 256,
        precision: 'int8',
        metric: 'cosine',
        quantization: type === 'TEXT_COST_EFFECTIVE' ? 'i8' : 'f32',
      });
      expect(config.body.data.warning).toBeUndefined();
      // Chunks fit what MiniLM reads (256 word pieces).
      expect(config.body.data.chunking.size).toBeGreaterThan(0);
      expect(config.body.data.chunking.size).toBeLessThanOrEqual(256 * 4);
      const read = await server.api('GET', `/api/v1/knowledge-bases/${id}`);
      expect(read.body.data.embeddingModel).toBe(SHIPPED_MODEL_ID);
    }
    const list = await server.api('GET', '/api/v1/knowledge-bases');
    expect(list.body.data.map((k: any) => k.embeddingModel)).toEqual(TYPES.map(() => SHIPPED_MODEL_ID));
  });

  test('semantic search finds a paraphrase that shares no word with its page', async () => {
    for (const type of ['TEXT_HIGH_QUALITY', 'TEXT_COST_EFFECTIVE']) {
      const kb = await server.createKb(type);
      const pages: Record<string, string> = {
        expenses:
          'Expense claims: staff who travel for work claim back flights, hotels and meals. Upload the receipts to the finance portal within 30 days; approved claims are repaid with the next salary.',
        holidays:
          'Annual leave: every employee has 25 days of paid vacation a year. Ask your manager at least two weeks ahead and record the dates in the HR calendar.',
        passwords: 'Password resets: if you are locked out of your laptop, call the IT help desk on extension 4040. New passwords need twelve characters.',
        parking: 'Car park: spaces on level 2 are reserved for visitors. Staff park on levels 3 to 5 and must display the yearly permit.',
        kitchen: 'Kitchen rules: label food you keep in the fridge; the fridge is emptied every Friday afternoon. Run the dishwasher when it is full.',
        badges: 'Security badges: wear your badge at all times inside the building. A lost badge must be reported to reception the same day.',
        laptops: 'New starters receive a laptop, a headset and a monitor on their first morning. Equipment is returned to IT when someone leaves.',
      };
      const names = new Map<string, string>();
      for (const [name, text] of Object.entries(pages)) {
        const added = await server.api('POST', `/api/v1/knowledge-bases/${kb}/contents?wait=true`, { text });
        expect(added.body.data.status).toBe('ready');
        names.set(added.body.data.id, name);
      }
      const query = 'getting reimbursed for a business trip';
      // No index term in common with any page: full-text finds nothing, only the model can.
      const terms = new Set(analyze(query));
      for (const text of Object.values(pages)) expect(analyze(text).filter((t) => terms.has(t))).toEqual([]);
      const fullText = await server.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query });
      expect(fullText.body.data).toEqual([]);
      const semantic = await server.api('POST', `/api/v1/knowledge-bases/${kb}/search/semantic`, { query, limit: 7 });
      expect(semantic.status).toBe(200);
      const ranked = semantic.body.data.map((h: any) => names.get(h.contentId));
      expect({ type, top: ranked[0] }).toEqual({ type, top: 'expenses' });
      // By a clear margin, not a coin toss.
      expect(semantic.body.data[0].score - semantic.body.data[1].score).toBeGreaterThan(0.05);
    }
  }, 60_000);
});

describe('bun run models list', () => {
  test('shows the shipped model and the types it serves, from any folder and with no environment', () => {
    const cwd = mkdtempSync(join(work, 'list-'));
    const run = Bun.spawnSync(['bun', join(ROOT, 'src/models.ts'), 'list'], { cwd, env: bareEnv() });
    const out = run.stdout.toString();
    expect(run.exitCode).toBe(0);
    expect(out).toMatch(
      /Xenova\/all-MiniLM-L6-v2\s+2\d\.\d MB\s+int8\s+used by: TEXT_COST_EFFECTIVE, TEXT_HIGH_QUALITY, TEXT_AND_MEDIA_HIGH_QUALITY\s+\(shipped with the server\)/,
    );
    expect(out).toMatch(/universal-sentence-encoder-lite\s+built in\s+used by: no type/);
    expect(out).toContain('bun run models pull Xenova/bge-small-en-v1.5');
    const useLite = Bun.spawnSync(['bun', join(ROOT, 'src/models.ts'), 'list'], { cwd, env: bareEnv({ HIGH_QUALITY_MODEL: 'use-lite' }) });
    expect(useLite.stdout.toString()).toMatch(/Xenova\/all-MiniLM-L6-v2 .*used by: TEXT_COST_EFFECTIVE\s+\(shipped/);
    expect(useLite.stdout.toString()).toMatch(/universal-sentence-encoder-lite\s+built in\s+used by: TEXT_HIGH_QUALITY, TEXT_AND_MEDIA_HIGH_QUALITY/);
  });
});

describe('USE-Lite when it is asked for', () => {
  test('HIGH_QUALITY_MODEL=use-lite serves the high-quality types with USE-Lite (with its warning); cost-effective keeps the shipped model', async () => {
    const server = await Server.start({ HIGH_QUALITY_MODEL: 'use-lite' });
    try {
      const ready = await fetch(`${server.url}/ready`).then((r) => r.json() as Promise<any>);
      expect(ready.warnings).toHaveLength(2);
      expect(ready.warnings[0]).toContain('TEXT_HIGH_QUALITY is served by the small Universal Sentence Encoder Lite');
      expect(ready.warnings[0]).toContain('HIGH_QUALITY_MODEL=use-lite');
      const kb = await server.createKb('TEXT_HIGH_QUALITY');
      const config = await server.api('GET', `/api/v1/knowledge-bases/${kb}/configuration`);
      expect(config.body.data.embedding).toMatchObject({ provider: 'use-lite', model: 'universal-sentence-encoder-lite', dimensions: 512 });
      expect(config.body.data.warning).toContain('Universal Sentence Encoder Lite');
      const cheap = await server.createKb('TEXT_COST_EFFECTIVE');
      expect((await server.api('GET', `/api/v1/knowledge-bases/${cheap}/configuration`)).body.data.embedding).toMatchObject({
        model: SHIPPED_MODEL_ID,
        precision: 'int8',
        quantization: 'i8',
      });
      const added = await server.api('POST', `/api/v1/knowledge-bases/${kb}/contents?wait=true`, {
        text: 'Refunds are issued within fourteen days of the purchase.',
      });
      expect(added.body.data.status).toBe('ready');
      const semantic = await server.api('POST', `/api/v1/knowledge-bases/${kb}/search/semantic`, { query: 'refund policy' });
      expect(semantic.status).toBe(200);
      expect(semantic.body.data[0].contentId).toBe(added.body.data.id);
    } finally {
      await server.stop();
    }
  }, 90_000);
});

describe('resolution', () => {
  function configWith(env: Record<string, string>) {
    const others = { ...process.env };
    for (const key of ['EMBEDDING_MODEL_DIR', 'EMBEDDING_PRECISION', 'HIGH_QUALITY_MODEL', 'COST_EFFECTIVE_MODEL']) delete others[key];
    return loadConfig({ ...others, ...env });
  }

  test('whatever EMBEDDING_MODEL_DIR is, the shipped model serves, int8 (its only export)', () => {
    for (const dir of [join(work, 'empty'), '/nonexistent']) {
      const types = typeEmbeddings(configWith({ EMBEDDING_MODEL_DIR: dir }));
      for (const type of TYPES)
        expect(types[type as keyof typeof types]).toMatchObject({ provider: 'transformers', model: SHIPPED_MODEL_ID, precision: 'int8' });
      expect(types.TEXT_COST_EFFECTIVE.quantization).toBe('i8');
    }
    expect(resolveModel('shipped', configWith({ EMBEDDING_PRECISION: 'int8' }))).toMatchObject({ model: SHIPPED_MODEL_ID, precision: 'int8' });
  });

  test('an fp32 export of MiniLM-L6 in EMBEDDING_MODEL_DIR serves fp32 (the default precision); EMBEDDING_PRECISION=int8 keeps int8', () => {
    const dir = mkdtempSync(join(work, 'fp32-'));
    mkdirSync(join(dir, 'Xenova'));
    symlinkSync(resolve(ROOT, '..', 'shared', 'models', SHIPPED_MODEL_ID), join(dir, SHIPPED_MODEL_ID));
    expect(resolveModel('auto', configWith({ EMBEDDING_MODEL_DIR: dir }))).toMatchObject({ model: SHIPPED_MODEL_ID, precision: 'fp32' });
    expect(resolveModel('shipped', configWith({ EMBEDDING_MODEL_DIR: dir }))).toMatchObject({ model: SHIPPED_MODEL_ID, precision: 'fp32' });
    expect(resolveModel('auto', configWith({ EMBEDDING_MODEL_DIR: dir, EMBEDDING_PRECISION: 'int8' }))).toMatchObject({
      model: SHIPPED_MODEL_ID,
      precision: 'int8',
    });
  });
});
