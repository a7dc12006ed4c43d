// Any OpenAI-compatible embeddings endpoint (OpenAI, Ollama, TEI, vLLM): POST {url}/embeddings
// with { model, input: [...] }. Timeouts per attempt, retries with exponential backoff on network
// errors, 429 and 5xx; other 4xx fail at once (retrying a bad request cannot help).
//
// Vectors are asked for as base64 (`encoding_format: "base64"`, little-endian float32, as
// OpenAI's own clients do): a quarter of the bytes of JSON numbers and a third of the time to
// decode (64 × 384-d: 9 against 27 µs a vector). An endpoint that answers with numbers anyway is
// read as well; one that refuses the field (a 400 or 422 naming it) is asked again without it, and
// from then on never with it.
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
  let base64 = true;

  /** One embedding as the endpoint sent it (base64 or numbers), checked against the dimensions. */
  function vectorOf(embedding: unknown): Float32Array {
    const bytes = typeof embedding === 'string' ? Buffer.from(embedding, 'base64') : undefined;
    const length = bytes ? bytes.length / 4 : Array.isArray(embedding) ? embedding.length : 0;
    if (length !== options.dimensions) throw new EmbeddingError(`embedding endpoint returned a vector of ${length} dimensions, expected ${options.dimensions}`);
    return normalize(
      bytes ? new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)) : Float32Array.from(embedding as number[]),
    );
  }

  async function request(input: string[]): Promise<Float32Array[]> {
    let lastError = 'no attempt made';
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) await sleep(backoffDelay(attempt, { baseMs: backoffMs }));
      let res: Response;
      try {
        res = await fetch(endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
          body: JSON.stringify({ model: options.model, input, ...(base64 ? { encoding_format: 'base64' } : {}) }),
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
        if (base64 && (res.status === 400 || res.status === 422) && /encoding_format|base64/i.test(detail)) {
          base64 = false;
          return request(input);
        }
        throw new EmbeddingError(`embedding endpoint answered ${res.status}${detail ? `: ${detail}` : ''}`);
      }
      const body = (await res.json().catch(() => undefined)) as { data?: { embedding?: unknown; index?: number }[] } | undefined;
      const data = body?.data;
      if (!Array.isArray(data) || data.length !== input.length) {
        throw new EmbeddingError(`embedding endpoint returned ${Array.isArray(data) ? data.length : 'no'} embeddings for ${input.length} inputs`);
      }
      // The API may reorder; `index` says which input each embedding belongs to.
      const ordered = [...data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
      return ordered.map((d) => vectorOf(d.embedding));
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
