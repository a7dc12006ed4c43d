// Forwarding a request to another node (src/http/forward.ts), against real HTTP listeners standing
// in for the nodes: the answer comes back unchanged; a node that refuses the connection or answers
// 503 (starting, stopping) passes the request to the next holder; a request that may have been
// applied, or whose streamed body is spent, is not sent twice; one hop only.
import { CONSISTENCY_HEADER, wantsStrongRead, whenStrong } from '../../src/http/consistency';
import { afterAll, describe, expect, test } from 'bun:test';
import { APPLIED_HEADER, catchUp, forward, FORWARDED_HEADER } from '../../src/http/forward';
import { ApiError } from '../../src/errors';
import { freePort } from '../helpers/s3';

const seen: { node: string; method: string; path: string; body: string; headers: Headers }[] = [];
const servers: ReturnType<typeof Bun.serve>[] = [];
function node(name: string, answer: (req: Request) => Response | Promise<Response>) {
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      seen.push({ node: name, method: req.method, path: new URL(req.url).pathname + new URL(req.url).search, body: await req.text(), headers: req.headers });
      return answer(req);
    },
  });
  servers.push(server);
  return { nodeId: name, url: `http://127.0.0.1:${server.port}`, shards: [1] };
}
afterAll(() => servers.forEach((s) => s.stop(true)));

const ok = node('ok', () => Response.json({ success: true, data: [] }, { headers: { 'x-extra': 'kept' } }));
const starting = node('starting', () => Response.json({ success: false, error: { code: 'NOT_READY' } }, { status: 503 }));
const broken = node('broken', () => new Response('boom', { status: 500 }));
const incoming = (init: RequestInit = {}) =>
  new Request('http://127.0.0.1:1/api/v1/knowledge-bases/kb_x/search/full-text?x=1', {
    method: 'POST',
    headers: { 'x-service-api-key': 'k', 'x-service-organization-id': 'o' },
    ...init,
  });

describe('forward', () => {
  test('the answer of the holder comes back unchanged, the credentials and the body go on', async () => {
    seen.length = 0;
    const res = await forward(incoming(), { query: 'refund' }, { shard: 1, nodes: [ok] }, 'node-a', 5000);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-extra')).toBe('kept');
    expect(await res.json()).toEqual({ success: true, data: [] });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'POST', path: '/api/v1/knowledge-bases/kb_x/search/full-text?x=1', body: '{"query":"refund"}' });
    expect(seen[0]!.headers.get('x-service-api-key')).toBe('k');
    expect(seen[0]!.headers.get(FORWARDED_HEADER)).toBe('node-a');
  });

  test('a refused connection or a 503 passes the request to the next holder', async () => {
    seen.length = 0;
    const gone = { nodeId: 'gone', url: `http://127.0.0.1:${await freePort()}`, shards: [1] };
    const res = await forward(incoming(), { query: 'refund' }, { shard: 1, nodes: [gone, starting, ok] }, 'node-a', 5000);
    expect(res.status).toBe(200);
    expect(seen.map((s) => s.node)).toEqual(['starting', 'ok']);
  });

  test('other answers stand (the request may have been applied), as does the last 503', async () => {
    seen.length = 0;
    expect((await forward(incoming(), {}, { shard: 1, nodes: [broken, ok] }, 'node-a', 5000)).status).toBe(500);
    expect((await forward(incoming(), {}, { shard: 1, nodes: [starting] }, 'node-a', 5000)).status).toBe(503);
    expect(seen.map((s) => s.node)).toEqual(['broken', 'starting']);
  });

  test('a streamed upload goes to one node only', async () => {
    seen.length = 0;
    const upload = incoming({ body: new Blob(['file bytes']).stream(), headers: { 'content-type': 'application/octet-stream' } });
    const res = await forward(upload, 'stream', { shard: 1, nodes: [starting, ok] }, 'node-a', 5000);
    expect(res.status).toBe(503);
    expect(seen.map((s) => [s.node, s.body])).toEqual([['starting', 'file bytes']]);
  });

  test('no live holder, or a request already forwarded: 503 NOT_READY, nothing sent', async () => {
    seen.length = 0;
    const none = forward(incoming(), {}, { shard: 3, nodes: [] }, 'node-a', 5000);
    await expect(none).rejects.toBeInstanceOf(ApiError);
    await expect(none).rejects.toMatchObject({ code: 'NOT_READY', headers: { 'retry-after': '1' } });
    const looped = forward(incoming({ headers: { [FORWARDED_HEADER]: 'node-b' } }), {}, { shard: 1, nodes: [ok] }, 'node-a', 5000);
    await expect(looped).rejects.toMatchObject({ code: 'NOT_READY' });
    expect(seen).toHaveLength(0);
  });
});

describe('catching up before answering a forwarded request', () => {
  const forwarded = (seq: string) =>
    new Request('http://127.0.0.1:1/api/v1/knowledge-bases/kb_x/contents', { headers: { [FORWARDED_HEADER]: 'node-a', [APPLIED_HEADER]: seq } });

  test('the forwarding node says how far it had applied the log', async () => {
    seen.length = 0;
    await forward(incoming(), {}, { shard: 1, nodes: [ok], appliedSeq: 42 }, 'node-a', 5000);
    expect(seen[0]!.headers.get(APPLIED_HEADER)).toBe('42');
  });

  test('the receiving node waits until it has applied as far; 503 when it cannot in time', async () => {
    const asked: number[] = [];
    await catchUp(forwarded('42'), async (seq) => (asked.push(seq), true));
    expect(asked).toEqual([42]);
    const late = catchUp(forwarded('43'), async () => false);
    await expect(late).rejects.toMatchObject({ code: 'NOT_READY', headers: { 'retry-after': '1' } });
  });

  test('only forwarded requests with a sane position wait', async () => {
    const asked: number[] = [];
    const whenApplied = async (seq: number) => (asked.push(seq), true);
    await catchUp(new Request('http://127.0.0.1:1/', { headers: { [APPLIED_HEADER]: '42' } }), whenApplied); // not forwarded
    for (const bad of ['', 'abc', '-5', '0', '1e300', '9007199254740993']) await catchUp(forwarded(bad), whenApplied);
    expect(asked).toEqual([]);
  });
});

describe('strong reads (x-kb-consistency)', () => {
  const asking = (value?: string) => new Request('http://127.0.0.1:1/', { headers: value === undefined ? {} : { [CONSISTENCY_HEADER]: value } });

  test('strong waits until the node is current; 503 with retry-after when it cannot be in time', async () => {
    const asked: number[] = [];
    await whenStrong(async (ms) => (asked.push(ms), true));
    expect(asked).toEqual([5000]);
    await expect(whenStrong(async () => false)).rejects.toMatchObject({ code: 'NOT_READY', headers: { 'retry-after': '1' } });
  });

  test('the header is strong or eventual, in any case and spacing; absent is eventual; anything else is a 400', () => {
    expect([undefined, 'eventual', 'strong', ' STRONG '].map((v) => wantsStrongRead(asking(v)))).toEqual([false, false, true, true]);
    for (const bad of ['', 'all', 'strong; q=1']) expect(() => wantsStrongRead(asking(bad))).toThrow(expect.objectContaining({ code: 'VALIDATION_ERROR' }));
  });
});
