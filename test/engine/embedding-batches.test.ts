// Batching by length (engine/embedding/batches.ts): calls in ascending length under a text and a
// padded-size budget; embedAll hands a self-batching provider (transformers.js, which batches by
// tokens) the whole request; padBatch builds a call's int64 inputs. With the real MiniLM int8: a
// text that fills a call alone gets the same vector whatever else its request holds.
import { describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import fc from 'fast-check';
import { batchesItself, planBatches, type TokenBatchLimits } from '../../engine/embedding/batches';
import type { EmbedKind, EmbeddingProvider } from '../../engine/embedding/provider';
import { createTransformersProvider, padBatch } from '../../engine/embedding/providers/transformers';
import { embedAll } from '../../engine/ingest/handlers';

describe('planBatches', () => {
  test('ascending length, at most `texts` a call, at most `padded` once padded; a text over the budget goes alone', () => {
    //               0    1    2   3    4   5    6
    const lengths = [300, 10, 250, 12, 11, 600, 40];
    const batches = planBatches(lengths, { texts: 3, padded: 256 });
    expect(batches).toEqual([[1, 4, 3], [6], [2], [0], [5]]);
    // 40 could not join [10, 11, 12] (three texts already); 250 could not join 40 (2 × 250 > 256).
  });

  test('texts of equal length keep their order; none is empty', () => {
    expect(planBatches([5, 5, 5, 5], { texts: 16, padded: 10 })).toEqual([
      [0, 1],
      [2, 3],
    ]);
    expect(planBatches([], { texts: 16, padded: 256 })).toEqual([]);
    expect(planBatches([0, 0], { texts: 16, padded: 1 })).toEqual([[0, 1]]);
  });

  test('property: every index once; each call within its limits (or alone); calls ascend in length', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 600 }), { maxLength: 80 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 1200 }),
        (lengths, texts, padded) => {
          const batches = planBatches(lengths, { texts, padded });
          expect(batches.flat().sort((a, b) => a - b)).toEqual(lengths.map((_, i) => i));
          let previous = -1;
          for (const batch of batches) {
            expect(batch.length).toBeGreaterThan(0);
            expect(batch.length).toBeLessThanOrEqual(texts);
            const ls = batch.map((i) => lengths[i]!);
            if (batch.length > 1) expect(batch.length * Math.max(...ls)).toBeLessThanOrEqual(padded);
            expect(Math.min(...ls)).toBeGreaterThanOrEqual(previous);
            previous = Math.max(...ls);
          }
        },
      ),
    );
  });
});

describe('embedAll', () => {
  test('a provider that batches by tokens itself gets the whole request and the token limits', async () => {
    const calls: { texts: string[]; limits: TokenBatchLimits }[] = [];
    const selfBatching = {
      model: 'fake',
      dimensions: 1,
      async embed(): Promise<Float32Array[]> {
        throw new Error('embed() is not called for a self-batching provider');
      },
      async embedInBatches(texts: string[], _kind: EmbedKind, limits: TokenBatchLimits) {
        calls.push({ texts, limits });
        return texts.map((t) => Float32Array.of(t.length));
      },
    };
    expect(batchesItself(selfBatching)).toBe(true);
    const texts = ['x'.repeat(3000), 'a', 'bb', 'y'.repeat(900)];
    const vectors = await embedAll(selfBatching, texts, 'document', { texts: 16, chars: 2048, tokens: 256 });
    expect(calls).toEqual([{ texts, limits: { texts: 16, tokens: 256 } }]);
    expect(vectors.map((v) => v[0])).toEqual(texts.map((t) => t.length));
    // Without a token budget: the default, one full MiniLM chunk.
    await embedAll(selfBatching, ['a'], 'document', { texts: 4, chars: 100 });
    expect(calls[1]!.limits).toEqual({ texts: 4, tokens: 256 });
  });

  test('any other provider is called per batch planned by characters', async () => {
    const batches: string[][] = [];
    const plain: EmbeddingProvider = {
      model: 'fake',
      dimensions: 1,
      async embed(texts) {
        batches.push(texts);
        return texts.map((t) => Float32Array.of(t.length));
      },
    };
    expect(batchesItself(plain)).toBe(false);
    await embedAll(plain, ['aaaa', 'a', 'aa', 'aaa'], 'document', { texts: 16, chars: 6, tokens: 1 });
    expect(batches).toEqual([['a', 'aa'], ['aaa'], ['aaaa']]);
  });
});

describe('padBatch', () => {
  test('right padding to the longest, a mask over each text, token types 0, exact int64 values', () => {
    const batch = [Int32Array.of(101, 30521, 102), Int32Array.of(101, 102), Int32Array.of(101, 7, 8, 9, 102)];
    const { seq, inputIds, attentionMask, tokenTypeIds } = padBatch(batch, 0);
    expect(seq).toBe(5);
    expect(Array.from(inputIds, Number)).toEqual([101, 30521, 102, 0, 0, 101, 102, 0, 0, 0, 101, 7, 8, 9, 102]);
    expect(Array.from(attentionMask, Number)).toEqual([1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1]);
    expect(Array.from(tokenTypeIds, Number)).toEqual(new Array(15).fill(0));
    expect(inputIds[1]).toBe(30521n);
    // Another pad id.
    expect(Array.from(padBatch([Int32Array.of(5), Int32Array.of(6, 7)], 1).inputIds, Number)).toEqual([5, 1, 6, 7]);
  });
});

// The real MiniLM int8 export (shipped in models/, or in ../shared/models).
const minilmDir = [resolve(import.meta.dir, '..', '..', 'models'), resolve(import.meta.dir, '..', '..', '..', 'shared', 'models')].find((d) =>
  existsSync(resolve(d, 'Xenova/all-MiniLM-L6-v2/onnx/model_quantized.onnx')),
);

describe.skipIf(!minilmDir)('transformers provider batching, real MiniLM int8', () => {
  test('a text that fills a call gets the same vector alone or amid others; every vector lands at its text', async () => {
    const p = await createTransformersProvider(
      { provider: 'transformers', model: 'Xenova/all-MiniLM-L6-v2', dimensions: 384, pooling: 'mean', maxTokens: 256, precision: 'int8' },
      { modelDir: minilmDir, threads: 1 },
    );
    try {
      if (!batchesItself(p)) throw new Error('the transformers provider batches by tokens itself');
      const long = Array.from({ length: 60 }, (_, i) => `Sentence ${i} about vitamin D, bone density and older adults.`).join(' '); // > 256 word pieces
      const short = ['refunds', 'money back within fourteen days', 'cats', 'a much longer sentence about the weather in spring'];
      const [alone] = await p.embed([long], 'document');
      const mixed = await p.embedInBatches([short[0]!, long, ...short.slice(1)], 'document', { texts: 16, tokens: 256 });
      expect(Array.from(mixed[1]!)).toEqual(Array.from(alone!));
      // Short texts share calls; each vector is its own text's (close to embedding it alone).
      for (const [i, text] of [short[0]!, long, ...short.slice(1)].entries()) {
        const [single] = await p.embedInBatches([text], 'document', { texts: 1, tokens: 256 });
        let cos = 0;
        for (let k = 0; k < 384; k++) cos += single![k]! * mixed[i]![k]!;
        expect(cos).toBeGreaterThan(0.98);
      }
    } finally {
      await p.close?.();
    }
  }, 60_000);
});
