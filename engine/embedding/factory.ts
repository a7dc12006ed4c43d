// EmbeddingSpec → a live provider. Deployment settings (model directory, endpoint URL and key)
// come from the server, never from the knowledge base record.
import type { EmbeddingProvider, EmbeddingSpec } from './provider';
import { createHttpProvider } from './providers/http';
import { createUseLiteProvider } from './providers/use-lite';

export interface EmbeddingSettings {
  /** Local directory of transformers.js models (`<dir>/<org>/<name>/onnx/model.onnx`). */
  modelDir?: string;
  /** Searched in order after modelDir for a model it lacks: where the server's shipped model is. */
  fallbackModelDirs?: readonly string[];
  /** Let transformers.js download models from the hub (only where the deployment has internet). */
  allowRemoteModels?: boolean;
  /** onnxruntime threads per worker. */
  threads?: number;
  http?: { url: string; apiKey?: string; timeoutMs?: number; retries?: number };
}

export { specKey } from './provider';

export async function createProvider(spec: EmbeddingSpec, settings: EmbeddingSettings): Promise<EmbeddingProvider> {
  switch (spec.provider) {
    case 'use-lite':
      return createUseLiteProvider();
    case 'transformers': {
      // Loaded on demand: onnxruntime is only needed where a transformers model is configured.
      const { createTransformersProvider } = await import('./providers/transformers');
      return createTransformersProvider(spec, {
        modelDir: settings.modelDir,
        fallbackModelDirs: settings.fallbackModelDirs,
        allowRemote: settings.allowRemoteModels,
        threads: settings.threads,
      });
    }
    case 'http':
      if (!settings.http?.url) throw new Error('EMBEDDING_HTTP_URL is not configured');
      return createHttpProvider({ ...settings.http, model: spec.model, dimensions: spec.dimensions });
  }
}
