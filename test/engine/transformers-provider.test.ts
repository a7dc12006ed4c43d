import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { env } from '@huggingface/transformers';
import { EmbeddingError, type EmbeddingProvider } from '../../engine/embedding/provider';
import { createTransformersProvider, type TransformersSpec } from '../../engine/embedding/providers/transformers';
import { writeTinyModel } from '../fixtures/tiny-model';

const dot = (a: Float32Array, b: Float32Array) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
};
const norm = (a: Float32Array) => Math.sqrt(dot(a, a));
const maxDiff = (a: Float32Array, b: Float32Array) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
};

let dir: string;
let modelId: string;
let dimensions: number;
const providers: EmbeddingProvider[] = [];
// Any network attempt by transformers.js goes through env.fetch: make it fail loudly.
const fetches: string[] = [];
const originalFetch = env.fetch;

function spec(overrides: Partial<TransformersSpec> = {}): TransformersSpec {
  return { provider: 'transformers', model: modelId, dimensions, pooling: 'mean', ...overrides };
}

async function open(overrides: Partial<TransformersSpec> = {}, modelDir = dir): Promise<EmbeddingProvider> {
  const p = await createTransformersProvider(spec(overrides), { modelDir, allowRemote: false, threads: 1 });
  providers.push(p);
  return p;
}

beforeAll(async () => {
  env.fetch = async (input: string | URL) => {
    fetches.push(String(input));
    throw new Error(`network access attempted: ${String(input)}`);
  };
  dir = mkdtempSync(join(tmpdir(), 'kb-tiny-model-'));
  ({ modelId, dimensions } = await writeTinyModel(dir));
});

afterAll(async () => {
  for (const p of providers.splice(0)) await p.close?.();
  env.fetch = originalFetch;
  rmSync(dir, { recursive: true, force: true });
});

describe('transformers provider (tiny generated model)', () => {
  test('vectors have the spec dimensions and unit norm', async () => {
    const p = await open();
    expect(p.model).toBe(modelId);
    expect(p.dimensions).toBe(dimensions);
    const vs = await p.embed(['car', 'the red car is fast', 'banana peel', 'zzz unknown words'], 'document');
    expect(vs).toHaveLength(4);
    for (const v of vs) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.length).toBe(dimensions);
      expect(norm(v)).toBeCloseTo(1, 5);
    }
    expect(await p.embed([], 'document')).toEqual([]);
  });

  test('deterministic across calls and provider instances', async () => {
    const a = await open();
    const b = await open();
    const texts = ['car', 'automobile engine', 'how to pay with cash'];
    const first = await a.embed(texts, 'document');
    const again = await a.embed(texts, 'document');
    const other = await b.embed(texts, 'document');
    for (let i = 0; i < texts.length; i++) {
      expect(Array.from(again[i]!)).toEqual(Array.from(first[i]!));
      expect(Array.from(other[i]!)).toEqual(Array.from(first[i]!));
    }
  });

  test('returned vectors are copies, not views of a shared tensor', async () => {
    const p = await open();
    const [a, b] = await p.embed(['car', 'banana'], 'document');
    expect(a!.buffer).not.toBe(b!.buffer);
    const before = Float32Array.from(b!);
    a!.fill(0);
    expect(Array.from(b!)).toEqual(Array.from(before));
  });

  test('mean and cls pooling differ', async () => {
    const mean = await open({ pooling: 'mean' });
    const cls = await open({ pooling: 'cls' });
    const [m] = await mean.embed(['the car is fast'], 'document');
    const [c] = await cls.embed(['the car is fast'], 'document');
    expect(norm(c!)).toBeCloseTo(1, 5);
    expect(maxDiff(m!, c!)).toBeGreaterThan(1e-3);
  });

  test('query prefix is applied to queries only', async () => {
    const plain = await open();
    const prefixed = await open({ queryPrefix: 'query: ' });
    const [plainDoc] = await plain.embed(['car'], 'document');
    const [plainQuery] = await plain.embed(['car'], 'query');
    const [doc] = await prefixed.embed(['car'], 'document');
    const [query] = await prefixed.embed(['car'], 'query');
    // Without a prefix, queries and documents embed alike.
    expect(maxDiff(plainQuery!, plainDoc!)).toBeLessThan(1e-6);
    // Documents never get the prefix …
    expect(maxDiff(doc!, plainDoc!)).toBeLessThan(1e-6);
    // … queries do: the query is the document embedding of the prefixed text.
    expect(maxDiff(query!, doc!)).toBeGreaterThan(1e-3);
    const [manual] = await plain.embed(['query: car'], 'document');
    expect(maxDiff(query!, manual!)).toBeLessThan(1e-6);
  });

  test('a batch equals one-by-one results (padding does not leak)', async () => {
    const p = await open();
    const texts = ['car', 'the automobile and the truck drive in the rain', 'banana', 'my puppy is a fast dog', '', 'what is the price of this laptop ?'];
    // More texts than one internal batch, in mixed lengths.
    for (let i = 0; i < 14; i++) texts.push(`${'fruit '.repeat(i % 5)}cat ${i % 2 ? 'kitten' : 'snow'}`);
    const batch = await p.embed(texts, 'document');
    expect(batch).toHaveLength(texts.length);
    for (let i = 0; i < texts.length; i++) {
      const [single] = await p.embed([texts[i]!], 'document');
      expect(maxDiff(batch[i]!, single!)).toBeLessThan(1e-5);
    }
  });

  test('related words are closer than unrelated ones', async () => {
    const p = await open({ queryPrefix: 'query: ' });
    const [car, automobile, banana] = await p.embed(['car', 'automobile', 'banana'], 'document');
    expect(dot(car!, automobile!)).toBeGreaterThan(dot(car!, banana!) + 0.3);
    const [q] = await p.embed(['automobile'], 'query');
    const docs = await p.embed(['a fast car', 'banana and mango', 'my cat'], 'document');
    const scores = docs.map((d) => dot(q!, d));
    expect(scores[0]).toBe(Math.max(...scores));
  });

  test('input longer than maxTokens is truncated, keeping [CLS] … [SEP]', async () => {
    const short = await open({ maxTokens: 4 });
    const long = await open();
    const a = 'car automobile banana apple';
    const b = 'car automobile banana dog cat kitten puppy';
    // Both become [CLS] car automobile [SEP] (as Python's tokenizers truncate) …
    const [sa, sb, fits, exact] = await short.embed([a, b, 'car automobile', 'car'], 'document');
    expect(maxDiff(sa!, sb!)).toBeLessThan(1e-6);
    expect(maxDiff(sa!, fits!)).toBeLessThan(1e-6);
    // … and a text that fits is left alone, also alone in its batch.
    const [alone] = await short.embed(['car automobile'], 'document');
    expect(maxDiff(alone!, fits!)).toBeLessThan(1e-6);
    expect(maxDiff(exact!, fits!)).toBeGreaterThan(1e-3);
    // Without the limit the texts differ.
    const [la, lb, lfits] = await long.embed([a, b, 'car automobile'], 'document');
    expect(maxDiff(la!, lb!)).toBeGreaterThan(1e-3);
    expect(maxDiff(lfits!, fits!)).toBeLessThan(1e-6);
  });

  test('model ids that are paths are rejected', async () => {
    for (const model of ['../outside', '/abs/path', 'a/b/c', '']) {
      const err = await createTransformersProvider(spec({ model }), { modelDir: dir }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EmbeddingError);
      expect((err as Error).message).toContain('Invalid model id');
    }
  });

  test('a quantized-only model directory loads (q8 file name)', async () => {
    const qdir = mkdtempSync(join(tmpdir(), 'kb-tiny-q8-'));
    try {
      const q = await writeTinyModel(qdir, { modelId: 'test/tiny-bert-q8', quantizedFile: true });
      const p = await createTransformersProvider({ provider: 'transformers', model: q.modelId, dimensions: q.dimensions, pooling: 'mean' }, { modelDir: qdir });
      const [v] = await p.embed(['car'], 'document');
      expect(v!.length).toBe(q.dimensions);
      await p.close?.();
      // Asked for fp32 explicitly, the same directory lacks it: the error names the file.
      const err = await createTransformersProvider(
        { provider: 'transformers', model: q.modelId, dimensions: q.dimensions, pooling: 'mean', precision: 'fp32' },
        { modelDir: qdir },
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EmbeddingError);
      expect((err as Error).message).toContain('missing onnx/model.onnx in');
    } finally {
      rmSync(qdir, { recursive: true, force: true });
    }
  });

  test('precision picks the ONNX export: the real MiniLM in fp32 and int8 gives close but different vectors', async () => {
    const shared = resolve(import.meta.dir, '..', '..', '..', 'shared', 'models');
    const minilm = (precision: 'fp32' | 'int8') =>
      createTransformersProvider(
        { provider: 'transformers', model: 'Xenova/all-MiniLM-L6-v2', dimensions: 384, pooling: 'mean', maxTokens: 256, precision },
        { modelDir: shared, threads: 1 },
      );
    const [fp32, int8] = await Promise.all([minilm('fp32'), minilm('int8')]);
    try {
      const text = 'Refunds are issued within fourteen days of the purchase.';
      const [a] = await fp32.embed([text], 'document');
      const [b] = await int8.embed([text], 'document');
      let cos = 0;
      for (let i = 0; i < 384; i++) cos += a![i]! * b![i]!;
      expect(cos).toBeGreaterThan(0.9);
      expect(cos).toBeLessThan(0.99999);
    } finally {
      await Promise.all([fp32.close?.(), int8.close?.()]);
    }
  }, 60_000);

  test('fallbackModelDirs: a model the model directory lacks (or lacks at this precision) loads from the first other folder holding it whole', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'kb-fallback-'));
    const shipped = resolve(import.meta.dir, '..', '..', 'models');
    const shared = resolve(import.meta.dir, '..', '..', '..', 'shared', 'models');
    const minilm = (precision: 'fp32' | 'int8', modelDir: string, fallbackModelDirs: string[]) =>
      createTransformersProvider(
        { provider: 'transformers', model: 'Xenova/all-MiniLM-L6-v2', dimensions: 384, pooling: 'mean', maxTokens: 256, precision },
        { modelDir, fallbackModelDirs, threads: 1 },
      );
    try {
      const text = 'Refunds are issued within fourteen days of the purchase.';
      // The shipped int8 export, found after an empty model directory, equals the same file loaded directly.
      const [viaFallback, direct] = await Promise.all([minilm('int8', empty, [shipped]), minilm('int8', shared, [])]);
      const [a] = await viaFallback.embed([text], 'document');
      const [b] = await direct.embed([text], 'document');
      expect(maxDiff(a!, b!)).toBeLessThan(1e-6);
      await Promise.all([viaFallback.close?.(), direct.close?.()]);
      // fp32 is not in the shipped folder: the error names every folder looked in.
      const err = await minilm('fp32', empty, [shipped]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EmbeddingError);
      expect((err as Error).message).toContain(
        `onnx/model.onnx in ${join(empty, 'Xenova/all-MiniLM-L6-v2')} (nor in ${join(shipped, 'Xenova/all-MiniLM-L6-v2')})`,
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  }, 60_000);

  test('a dimension mismatch is an EmbeddingError', async () => {
    const err = await createTransformersProvider(spec({ dimensions: dimensions + 1 }), { modelDir: dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbeddingError);
    expect((err as Error).message).toContain(`${dimensions}-dimensional`);
  });

  test('a missing model gives a clear error without touching the network', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'kb-no-model-'));
    try {
      for (const modelDir of [empty, join(empty, 'does-not-exist')]) {
        const err = await createTransformersProvider(spec({ model: 'nobody/no-such-model' }), {
          modelDir,
          allowRemote: false,
        }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(EmbeddingError);
        const message = (err as Error).message;
        expect(message).toContain('nobody/no-such-model');
        expect(message).toContain(join(modelDir, 'nobody/no-such-model'));
        expect(message).toContain('config.json');
        expect(message).toContain('remote downloads are disabled');
      }
      // Default for allowRemote is false as well.
      const err = await createTransformersProvider(spec({ model: 'nobody/no-such-model' }), { modelDir: empty }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EmbeddingError);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
    expect(fetches).toEqual([]);
  });

  test('nothing tried the network', () => {
    expect(fetches).toEqual([]);
  });
});
