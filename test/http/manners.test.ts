// HTTP manners (issue 14): 405 with Allow for a known path and a wrong method, the root pointing at
// the docs, /docs/ working, HEAD wherever GET is, and CORS for the origins in CORS_ORIGINS
// (preflights answered before authentication).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { parseCorsOrigins } from '../../src/http/cors';
import { RouteTable } from '../../src/http/methods';
import { createKb, KEY, ORG, InProcessServer } from '../helpers/server';

const ORIGIN = 'https://app.example.com';
let server: InProcessServer;
const AUTH = { 'x-service-organization-id': ORG, 'x-service-api-key': KEY };

beforeAll(async () => {
  server = await InProcessServer.start({ env: { CORS_ORIGINS: `${ORIGIN}, http://localhost:5173` } });
});
afterAll(async () => {
  await server.stop();
  server.cleanup();
});

describe('methods', () => {
  test('a known path with a wrong method: 405 with Allow, in the envelope', async () => {
    const res = await fetch(`${server.url}/health`, { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(await res.json()).toEqual({
      success: false,
      error: { code: 'METHOD_NOT_ALLOWED', message: 'DELETE is not allowed here; this path answers to GET, HEAD' },
    });
  });

  test('an API path checks the key first, then says which methods it answers to', async () => {
    const kb = await createKb(server);
    expect((await fetch(`${server.url}/api/v1/knowledge-bases/${kb}`, { method: 'POST' })).status).toBe(401);
    const res = await fetch(`${server.url}/api/v1/knowledge-bases/${kb}`, { method: 'POST', headers: AUTH });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('DELETE, GET, HEAD, PUT');
    const search = await fetch(`${server.url}/api/v1/knowledge-bases/${kb}/search/hybrid`, { headers: AUTH });
    expect(search.status).toBe(405);
    expect(search.headers.get('allow')).toBe('POST');
  });

  test('an unknown path is still 404', async () => {
    const res = await fetch(`${server.url}/nothing/here`, { method: 'DELETE' });
    expect(res.status).toBe(404);
    expect(res.headers.get('allow')).toBeNull();
  });

  test('HEAD answers wherever GET does, with the headers and no body', async () => {
    const kb = await createKb(server);
    for (const path of ['/health', `/api/v1/knowledge-bases/${kb}`, '/openapi.json']) {
      const res = await fetch(`${server.url}${path}`, { method: 'HEAD', headers: AUTH });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('json');
      expect((await res.arrayBuffer()).byteLength).toBe(0);
    }
  });

  test('the route table: parameters match one segment, HEAD follows GET', () => {
    const table = new RouteTable([
      { method: 'GET', path: '/a/:id' },
      { method: 'PATCH', path: '/a/:id' },
      { method: 'POST', path: '/a/:id/b' },
    ]);
    expect(table.allowed('/a/x')).toEqual(['GET', 'HEAD', 'PATCH']);
    expect(table.allowed('/a/x/b')).toEqual(['POST']);
    expect(table.allowed('/a/x/y/b')).toEqual([]);
    expect(table.allowed('/a/')).toEqual([]);
  });
});

describe('pointers to the docs', () => {
  test('/ redirects to /docs, and /docs/ to /docs, where the page is', async () => {
    const root = await fetch(`${server.url}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/docs');
    const slash = await fetch(`${server.url}/docs/`, { redirect: 'manual' });
    expect(slash.status).toBe(301);
    expect(slash.headers.get('location')).toBe('/docs');
    const page = await fetch(`${server.url}/docs/`);
    expect(page.status).toBe(200);
    expect(page.url).toBe(`${server.url}/docs`);
    expect(await page.text()).toContain('swagger');
  });

  test('a route with a trailing slash: 404 naming the route without it (a normalized dot segment looks the same and must not reach it)', async () => {
    const res = await fetch(`${server.url}/api/v1/knowledge-bases/`, { headers: AUTH, redirect: 'manual' });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      success: false,
      error: { code: 'NOT_FOUND', message: 'No such route; without the trailing slash this path answers to GET, HEAD, POST' },
    });
    // A path that is no route with or without the slash: the plain answer.
    expect(((await (await fetch(`${server.url}/api/v1/nothing/`, { headers: AUTH })).json()) as { error: { message: string } }).error.message).toBe(
      'No such route',
    );
  });
});

describe('CORS', () => {
  const preflight = (origin: string, path = '/api/v1/knowledge-bases') =>
    fetch(`${server.url}${path}`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, x-service-api-key, x-service-organization-id',
      },
    });

  test('a preflight from an allowed origin is answered without a key', async () => {
    const res = await preflight(ORIGIN);
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, HEAD, POST');
    expect(res.headers.get('access-control-allow-headers')).toContain('x-service-api-key');
    expect(res.headers.get('vary')).toBe('Origin');
  });

  test('another origin gets no CORS headers, so the browser refuses the call', async () => {
    const res = await preflight('https://evil.example.net');
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const call = await fetch(`${server.url}/api/v1/knowledge-bases`, { headers: { ...AUTH, origin: 'https://evil.example.net' } });
    expect(call.status).toBe(200);
    expect(call.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('answers to an allowed origin say so, errors included, and expose the request id', async () => {
    const ok = await fetch(`${server.url}/api/v1/knowledge-bases`, { headers: { ...AUTH, origin: 'http://localhost:5173' } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(ok.headers.get('access-control-expose-headers')).toContain('x-request-id');
    const denied = await fetch(`${server.url}/api/v1/knowledge-bases`, { headers: { origin: ORIGIN } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe(ORIGIN);
  });

  test('a preflight needs the key nowhere, but the call it announces still does', async () => {
    expect((await preflight(ORIGIN, '/api/v1/knowledge-bases/kb_x/search/hybrid')).status).toBe(204);
    expect((await fetch(`${server.url}/api/v1/knowledge-bases`, { method: 'POST', headers: { origin: ORIGIN } })).status).toBe(401);
  });

  test('CORS_ORIGINS: off when unset, `*`, or exact origins; a malformed one is refused with a hint', () => {
    expect(parseCorsOrigins(undefined)).toBeUndefined();
    expect(parseCorsOrigins(' ')).toBeUndefined();
    expect(parseCorsOrigins('*')).toEqual({ origins: '*' });
    expect(parseCorsOrigins('https://a.example, http://localhost:3000/')).toEqual({ origins: new Set(['https://a.example', 'http://localhost:3000']) });
    expect(() => parseCorsOrigins('a.example')).toThrow(/not an origin/);
    expect(() => parseCorsOrigins('https://a.example/app')).toThrow(/did you mean "https:\/\/a.example"/);
  });
});

test('without CORS_ORIGINS a preflight is an ordinary request: no CORS headers', async () => {
  const plain = await InProcessServer.start();
  try {
    const res = await fetch(`${plain.url}/api/v1/knowledge-bases`, { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'GET' } });
    expect(res.status).toBe(401);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  } finally {
    await plain.stop();
    plain.cleanup();
  }
}, 60_000);

describe('x-kb-consistency on a single node', () => {
  test('strong and eventual answer as usual (one node is always current); any other value is a 400 that changes nothing', async () => {
    const kb = await createKb(server);
    const contents = `/api/v1/knowledge-bases/${kb}/contents`;
    for (const level of ['strong', 'eventual', ' Strong ']) {
      const res = await server.api('POST', contents, { text: `written with ${level}` }, undefined, { 'x-kb-consistency': level });
      expect(res.status).toBe(201);
    }
    for (const bad of ['', 'linearizable', 'strong,eventual']) {
      const res = await server.api('POST', contents, { text: 'refused' }, undefined, { 'x-kb-consistency': bad });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.message).toContain('x-kb-consistency');
    }
    expect((await server.api('GET', `${contents}?limit=100`)).body.total).toBe(3);
    const preflight = await fetch(`${server.url}${contents}`, {
      method: 'OPTIONS',
      headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-kb-consistency' },
    });
    expect(preflight.headers.get('access-control-allow-headers')).toContain('x-kb-consistency');
  });
});
