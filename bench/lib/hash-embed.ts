// A deterministic stand-in for an embedding model: feature hashing of words, and an
// OpenAI-compatible POST /embeddings serving it (what the server's `http:` models call).
import { mulberry32 } from '../../support/random';
import { unit } from './vectors';

export const HASH_MODEL = 'bench-hash';
export const HASH_DIMENSIONS = 384;

const STOP = new Set(
  'a an and are as at be by for from has have in is it its of on or that the this to was were which with we our not no but than these those been'.split(' '),
);

/** FNV-1a, 32-bit. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Feature hashing of word prefixes (a crude stem: the first 6 letters), sublinear term
 * frequency, a signed bucket per word, L2-normalized: a lexical "embedding" that costs
 * microseconds, keeps similar texts close and stands in for a neural model in the benchmarks.
 */
export function hashEmbed(text: string, dimensions = HASH_DIMENSIONS): Float32Array {
  const counts = new Map<string, number>();
  for (const raw of text.toLowerCase().split(/[^a-z0-9]+/)) {
    if (raw.length < 2 || STOP.has(raw)) continue;
    const w = raw.slice(0, 6);
    counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  const v = new Float32Array(dimensions);
  for (const [w, n] of counts) {
    const h = fnv1a(w);
    v[h % dimensions]! += (h & 0x80000000 ? -1 : 1) * (1 + Math.log(n));
  }
  let s = 0;
  for (let i = 0; i < dimensions; i++) s += v[i]! * v[i]!;
  const norm = Math.sqrt(s);
  if (norm > 0) for (let i = 0; i < dimensions; i++) v[i]! /= norm;
  else v[0] = 1;
  return v;
}

/**
 * hashEmbed plus `weight` × a random unit vector seeded by the whole text, renormalized: texts
 * that differ only by a tag (replicated abstracts) stay apart instead of near-identical.
 */
export function hashEmbedWithTextNoise(text: string, weight: number, dimensions = HASH_DIMENSIONS): Float32Array {
  const v = hashEmbed(text, dimensions);
  const random = mulberry32(fnv1a(text));
  const noise = unit(Float32Array.from({ length: dimensions }, () => random() * 2 - 1));
  for (let i = 0; i < dimensions; i++) v[i]! += weight * noise[i]!;
  return unit(v);
}

export interface HashEmbedder {
  url: string;
  port: number;
  stop: () => void;
  calls: () => { requests: number; inputs: number };
}

/** An OpenAI-compatible POST /embeddings on 127.0.0.1 answering with `embed` (hashEmbed by default). */
export function startHashEmbedder(embed: (text: string) => Float32Array = (t) => hashEmbed(t)): HashEmbedder {
  let requests = 0;
  let inputs = 0;
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const path = new URL(req.url).pathname;
      if (req.method !== 'POST' || !path.endsWith('/embeddings')) return new Response('not found', { status: 404 });
      const body = (await req.json().catch(() => undefined)) as { input?: string | string[]; model?: string; encoding_format?: string } | undefined;
      const texts = typeof body?.input === 'string' ? [body.input] : body?.input;
      if (!Array.isArray(texts)) return Response.json({ error: { message: 'input must be a string or an array of strings' } }, { status: 400 });
      requests++;
      inputs += texts.length;
      // As OpenAI answers: base64 float32 when asked (the server asks), else numbers, five decimals
      // (plenty for benchmark vectors, and smaller responses).
      const base64 = body?.encoding_format === 'base64';
      const data = texts.map((t, index) => {
        const v = embed(String(t));
        return {
          object: 'embedding',
          index,
          embedding: base64 ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') : Array.from(v, (x) => Math.round(x * 1e5) / 1e5),
        };
      });
      return Response.json({ object: 'list', model: body?.model ?? HASH_MODEL, data, usage: { prompt_tokens: 0, total_tokens: 0 } });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, port: server.port!, stop: () => server.stop(true), calls: () => ({ requests, inputs }) };
}
