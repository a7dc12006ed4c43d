// Any OpenAI-compatible embeddings endpoint (OpenAI, Ollama, TEI, vLLM): POST {url}/embeddings
// with { model, input: [...] }. Timeouts per attempt, retries with exponential backoff on network
// errors, 429 and 5xx; other 4xx fail at once (retrying a bad request cannot help).
import { EmbeddingError, normalize, type EmbeddingProvider } from '../provider';
import { backoffDelay } from '../../retry';

export interface HttpProviderOptions {
  /** Base URL, e.g. https://api.openai.com/v1 or http://localhost:11434/v1 */
  url: string;
  model: string;
  dimensions: number;
  apiKey?: string;
  timeoutMs?: number;
  retries?: number;
  /** First backoff delay; doubles each retry. */
  backoffMs?: number;
  /** Largest number of inputs per request. */
  maxBatch?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createHttpProvider(options: HttpProviderOptions): EmbeddingProvider {
  const endpoint = `${options.url.replace(/\/+$/, '')}/embeddings`;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const retries = options.retries ?? 3;
  const backoffMs = options.backoffMs ?? 250;
  const maxBatch = options.maxBatch ?? 64;

  async function request(input: string[]): Promise<Float32Array[]> {
    let lastError = 'no attempt made';
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) await sleep(backoffDelay(attempt, { baseMs: backoffMs }));
      let res: Response;
      try {
        res = await fetch(endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
          body: JSON.stringify({ model: options.model, input }),
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (err) {
        // The error code only (ECONNREFUSED…): runtime messages are not for API clients.
        lastError =
          err instanceof Error && err.name === 'TimeoutError'
            ? `timed out after ${timeoutMs} ms`
            : `unreachable (${(err as { code?: string }).code ?? 'network error'})`;
        continue;
      }
      if (res.status === 429 || res.status >= 500) {
        lastError = `answered ${res.status}`;
        await res.body?.cancel();
        continue;
      }
      if (!res.ok) {
        const detail = (await res.text().catch(() => '')).slice(0, 200);
        throw new EmbeddingError(`embedding endpoint answered ${res.status}${detail ? `: ${detail}` : ''}`);
      }
      const body = (await res.json().catch(() => undefined)) as { data?: { embedding?: number[]; index?: number }[] } | undefined;
      const data = body?.data;
      if (!Array.isArray(data) || data.length !== input.length) {
        throw new EmbeddingError(`embedding endpoint returned ${Array.isArray(data) ? data.length : 'no'} embeddings for ${input.length} inputs`);
      }
      // The API may reorder; `index` says which input each embedding belongs to.
      const ordered = [...data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
      return ordered.map((d) => {
        if (!Array.isArray(d.embedding) || d.embedding.length !== options.dimensions) {
          throw new EmbeddingError(`embedding endpoint returned a vector of ${d.embedding?.length ?? 0} dimensions, expected ${options.dimensions}`);
        }
        return normalize(Float32Array.from(d.embedding));
      });
    }
    throw new EmbeddingError(`embedding endpoint ${lastError} after ${retries + 1} attempts`);
  }

  return {
    model: options.model,
    dimensions: options.dimensions,
    async embed(texts) {
      const out: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += maxBatch) out.push(...(await request(texts.slice(i, i + maxBatch))));
      return out;
    },
  };
}
