// Document embedding in a worker (engine/ingest/handlers.ts): texts are batched by length across
// the whole request, so each batch pads little; a batch stops at its text or character limit; and
// vectors come back in input order.
import { expect, test } from 'bun:test';
import type { EmbeddingProvider } from '../../engine/embedding/provider';
import { embedAll } from '../../engine/ingest/handlers';

function recorder() {
  const batches: string[][] = [];
  const provider: EmbeddingProvider = {
    model: 'fake',
    dimensions: 1,
    async embed(texts) {
      batches.push(texts);
      return texts.map((t) => Float32Array.of(t.length));
    },
  };
  return { batches, provider };
}

test('batches hold texts of similar length; every vector lands at its text', async () => {
  const { batches, provider } = recorder();
  const texts = ['aaaaaa', 'a', 'aaaa', 'aa', 'aaaaa', 'aaa', 'aaaaaaa'];
  const vectors = await embedAll(provider, texts, 'document', { texts: 3, chars: 1000 });
  expect(batches).toEqual([['a', 'aa', 'aaa'], ['aaaa', 'aaaaa', 'aaaaaa'], ['aaaaaaa']]);
  expect(vectors.map((v) => v[0])).toEqual(texts.map((t) => t.length));
});

test('a batch stops at its character budget: short texts share a call, long ones go one or two at a time', async () => {
  const { batches, provider } = recorder();
  const short = Array.from({ length: 6 }, (_, i) => `q${i}`); // 2 characters each
  const long = ['x'.repeat(1000), 'y'.repeat(1000), 'z'.repeat(1000), 'w'.repeat(3000)];
  const vectors = await embedAll(provider, [...long, ...short], 'document', { texts: 16, chars: 2048 });
  expect(batches.map((b) => b.length)).toEqual([6, 2, 1, 1]);
  expect(batches[3]![0]).toHaveLength(3000); // longer than the budget: alone
  expect(vectors.map((v) => v[0])).toEqual([...long, ...short].map((t) => t.length));
});
