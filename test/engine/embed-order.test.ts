// Document embedding in a worker (engine/ingest/handlers.ts): texts are batched by length across
// the whole request, so each batch pads little, and vectors come back in input order.
import { expect, test } from 'bun:test';
import type { EmbeddingProvider } from '../../engine/embedding/provider';
import { embedAll } from '../../engine/ingest/handlers';

test('batches hold texts of similar length; every vector lands at its text', async () => {
  const batches: string[][] = [];
  const provider: EmbeddingProvider = {
    model: 'fake',
    dimensions: 1,
    async embed(texts) {
      batches.push(texts);
      return texts.map((t) => Float32Array.of(t.length));
    },
  };
  const texts = ['aaaaaa', 'a', 'aaaa', 'aa', 'aaaaa', 'aaa', 'aaaaaaa'];
  const vectors = await embedAll(provider, texts, 'document', 3);
  expect(batches).toEqual([['a', 'aa', 'aaa'], ['aaaa', 'aaaaa', 'aaaaaa'], ['aaaaaaa']]);
  expect(vectors.map((v) => v[0])).toEqual(texts.map((t) => t.length));
});
