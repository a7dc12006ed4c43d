// The OpenAI-compatible provider against small servers the test starts.
import { afterAll, expect, test } from 'bun:test';
import { createHttpProvider } from '../../engine/embedding/providers/http';

const servers: ReturnType<typeof Bun.serve>[] = [];
afterAll(() => {
  for (const s of servers) s.stop(true);
});

function serve(handler: (req: Request, body: any, n: number) => Response | Promise<Response>) {
  let n = 0;
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const body = await req.json().catch(() => undefined);
      return handler(req, body, ++n);
    },
  });
  servers.push(server);
  return { url: `http://127.0.0.1:${server.port}/v1`, calls: () => n };
}

const vectorFor = (text: string) => [text.length, 1, 0, 0];

test('embeds a batch in order, normalized, with the API key and model sent', async () => {
  const seen: { auth: string | null; body: any }[] = [];
  const { url } = serve((req, body) => {
    seen.push({ auth: req.headers.get('authorization'), body });
    // Answer out of order: the provider must use `index`.
    const data = body.input.map((t: string, index: number) => ({ index, embedding: vectorFor(t) })).reverse();
    return Response.json({ data });
  });
  const p = createHttpProvider({ url, model: 'm1', dimensions: 4, apiKey: 'sk-test', maxBatch: 2 });
  const out = await p.embed(['a', 'bbb', 'cc'], 'document');
  expect(out.length).toBe(3);
  expect(seen.length).toBe(2); // batches of two
  expect(seen[0]!.auth).toBe('Bearer sk-test');
  // Vectors asked for as base64; an endpoint answering with numbers (as this one) is read too.
  expect(seen[0]!.body).toEqual({ model: 'm1', input: ['a', 'bbb'], encoding_format: 'base64' });
  const norm = (v: Float32Array) => Math.hypot(...v);
  for (const v of out) expect(norm(v)).toBeCloseTo(1, 6);
  // "bbb" → [3,1,0,0]/√10
  expect(out[1]![0]).toBeCloseTo(3 / Math.sqrt(10), 6);
});

test('retries 5xx and 429 with backoff, then succeeds', async () => {
  const { url, calls } = serve((_req, body, n) =>
    n === 1
      ? new Response('busy', { status: 503 })
      : n === 2
        ? new Response('slow down', { status: 429 })
        : Response.json({ data: body.input.map((t: string, index: number) => ({ index, embedding: vectorFor(t) })) }),
  );
  const p = createHttpProvider({ url, model: 'm', dimensions: 4, retries: 3, backoffMs: 5 });
  expect((await p.embed(['x'], 'query')).length).toBe(1);
  expect(calls()).toBe(3);
});

test('a 4xx other than 429 fails at once with the endpoint message', async () => {
  const { url, calls } = serve(() => new Response('{"error":"bad model"}', { status: 400 }));
  const p = createHttpProvider({ url, model: 'm', dimensions: 4, retries: 3, backoffMs: 5 });
  await expect(p.embed(['x'], 'query')).rejects.toThrow(/answered 400.*bad model/);
  expect(calls()).toBe(1);
});

test('an endpoint that is down fails after the retries with a readable error', async () => {
  const p = createHttpProvider({ url: 'http://127.0.0.1:9/v1', model: 'm', dimensions: 4, retries: 2, backoffMs: 5 });
  await expect(p.embed(['x'], 'query')).rejects.toThrow(/unreachable.*after 3 attempts/);
});

test('a slow endpoint times out', async () => {
  const { url } = serve(async () => {
    await Bun.sleep(500);
    return Response.json({ data: [] });
  });
  const p = createHttpProvider({ url, model: 'm', dimensions: 4, retries: 0, timeoutMs: 50 });
  await expect(p.embed(['x'], 'query')).rejects.toThrow(/timed out after 50 ms/);
});

test('wrong dimensions or counts are refused', async () => {
  const { url } = serve((_req, body) => Response.json({ data: body.input.map((_: string, index: number) => ({ index, embedding: [1, 2] })) }));
  const p = createHttpProvider({ url, model: 'm', dimensions: 4, retries: 0 });
  await expect(p.embed(['x'], 'query')).rejects.toThrow(/2 dimensions, expected 4/);
  const { url: url2 } = serve(() => Response.json({ data: [] }));
  await expect(createHttpProvider({ url: url2, model: 'm', dimensions: 4, retries: 0 }).embed(['x'], 'query')).rejects.toThrow(/0 embeddings for 1 inputs/);
});

/** A vector as OpenAI sends it with encoding_format "base64": little-endian float32 bytes. */
const base64Of = (v: number[]) => Buffer.from(Float32Array.from(v).buffer).toString('base64');

test('base64 vectors are decoded exactly as numbers would be', async () => {
  const { url } = serve((_req, body) =>
    Response.json({
      data: body.input.map((t: string, index: number) => ({ index, embedding: body.encoding_format === 'base64' ? base64Of(vectorFor(t)) : vectorFor(t) })),
    }),
  );
  const out = await createHttpProvider({ url, model: 'm', dimensions: 4 }).embed(['a', 'bbb'], 'document');
  expect(out[1]![0]).toBeCloseTo(3 / Math.sqrt(10), 6);
  expect(out[1]![1]).toBeCloseTo(1 / Math.sqrt(10), 6);
  expect(Math.hypot(...out[0]!)).toBeCloseTo(1, 6);
  // A base64 vector of the wrong length is refused like a wrong array.
  const { url: short } = serve((_req, body) =>
    Response.json({ data: body.input.map((_t: string, index: number) => ({ index, embedding: base64Of([1, 2]) })) }),
  );
  await expect(createHttpProvider({ url: short, model: 'm', dimensions: 4, retries: 0 }).embed(['x'], 'query')).rejects.toThrow(/2 dimensions, expected 4/);
});

test('an endpoint refusing encoding_format is asked again without it, and never with it after', async () => {
  const bodies: any[] = [];
  const { url, calls } = serve((_req, body) => {
    bodies.push(body);
    if ('encoding_format' in body) return Response.json({ detail: [{ loc: ['body', 'encoding_format'], msg: 'extra fields not permitted' }] }, { status: 422 });
    return Response.json({ data: body.input.map((t: string, index: number) => ({ index, embedding: vectorFor(t) })) });
  });
  const p = createHttpProvider({ url, model: 'm', dimensions: 4, retries: 0 });
  expect((await p.embed(['a'], 'query')).length).toBe(1);
  expect((await p.embed(['b'], 'query')).length).toBe(1);
  expect(calls()).toBe(3);
  expect(bodies.map((b) => 'encoding_format' in b)).toEqual([true, false, false]);
});
