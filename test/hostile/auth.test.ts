// The authentication matrix and request-line tricks, over real HTTP:
// - every /api/v1 route × {no headers, key missing, organization missing, wrong key, another
//   organization's key for this organization, …} → 401 UNAUTHORIZED; a valid other organization →
//   404 for this organization's resources and never their data; nothing changes in either
//   organization (mutating routes are sent valid bodies, so a hole would show);
// - raw sockets (node:net, the request bytes written here so path and Host are sent verbatim):
//   short Host with a path prefix, absolute-form targets, malformed Host values, dot segments
//   and trailing slashes.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { KEY, ORG, OTHER_KEY, OTHER_ORG, InProcessServer } from '../helpers/server';
import {
  API,
  call,
  expectEnvelope,
  expectErrorAnswer,
  expectRawEnvelope,
  expectSameState,
  fingerprint,
  printServerErrors,
  rawRequest,
  reportRequests,
  requestsSent,
  type Answer,
  type Auth,
  type RawAnswer,
} from './util';

const startedAt = requestsSent();
const OTHER: Auth = { org: OTHER_ORG, key: OTHER_KEY };
const SECRET_TEXT = 'confidential falcon migration notes';
const KB_NAME = 'Mine only';
const KB_DESCRIPTION = 'private description';

let server: InProcessServer;
let kb: string; // of ORG
let content: string; // in kb
let foreignKb: string; // of OTHER_ORG

beforeAll(async () => {
  // Hundreds of refused credentials from one address are the point here: no per-address limit.
  server = await InProcessServer.start({ env: { AUTH_REFUSED_BURST: '1000000' } });
  const created = await call(server, 'POST', `${API}/knowledge-bases`, { name: KB_NAME, description: KB_DESCRIPTION, type: 'TEXT_HIGH_QUALITY' });
  expect(created.status).toBe(201);
  kb = created.body.data.id;
  const c = await call(server, 'POST', `${API}/knowledge-bases/${kb}/contents?wait=true`, { text: SECRET_TEXT, metadata: { owner: 'me' } });
  expect(c.body.data?.status).toBe('ready');
  content = c.body.data.id;
  const f = await call(server, 'POST', `${API}/knowledge-bases`, { name: 'Theirs', type: 'TEXT_COST_EFFECTIVE' }, OTHER);
  expect(f.status).toBe(201);
  foreignKb = f.body.data.id;
  const fc = await call(server, 'POST', `${API}/knowledge-bases/${foreignKb}/contents?wait=true`, { text: 'their falcon plans' }, OTHER);
  expect(fc.body.data?.status).toBe('ready');
}, 120_000);

afterAll(async () => {
  printServerErrors(server, 'auth');
  await server?.stop();
  server?.cleanup();
  reportRequests('auth.test.ts', startedAt);
});

/** Both organizations' observable state. */
async function bothStates(): Promise<string> {
  return JSON.stringify([await fingerprint(server), await fingerprint(server, OTHER)]);
}

/** No trace of this organization's data in an answer. */
function expectNoData(raw: string, what: string): void {
  for (const secret of [SECRET_TEXT, KB_NAME, KB_DESCRIPTION, content, '"owner"']) {
    if (raw.includes(secret)) throw new Error(`${what} leaked ${JSON.stringify(secret)}: ${raw.slice(0, 300)}`);
  }
}

// --- the matrix --------------------------------------------------------------------------------

interface Route {
  method: string;
  path: () => string;
  /** A valid body, so a request that got through would change something. */
  body?: () => unknown;
  /** Addresses this organization's resources (a valid other organization gets 404). */
  scoped: boolean;
}

function uploadForm(): FormData {
  const form = new FormData();
  form.append('file', new Blob(['injected falcon file']), 'injected.txt');
  form.append('metadata', '{"owner":"intruder"}');
  return form;
}

const ROUTES: Route[] = [
  { method: 'GET', path: () => `${API}/knowledge-bases`, scoped: false },
  { method: 'POST', path: () => `${API}/knowledge-bases`, body: () => ({ name: 'Intruder', type: 'TEXT_HIGH_QUALITY' }), scoped: false },
  { method: 'GET', path: () => `${API}/knowledge-bases/${kb}`, scoped: true },
  {
    method: 'PUT',
    path: () => `${API}/knowledge-bases/${kb}`,
    body: () => ({ name: 'Hacked', description: 'owned', type: 'TEXT_HIGH_QUALITY' }),
    scoped: true,
  },
  { method: 'DELETE', path: () => `${API}/knowledge-bases/${kb}`, scoped: true },
  { method: 'GET', path: () => `${API}/knowledge-bases/${kb}/configuration`, scoped: true },
  { method: 'GET', path: () => `${API}/knowledge-bases/${kb}/contents`, scoped: true },
  { method: 'POST', path: () => `${API}/knowledge-bases/${kb}/contents?wait=true`, body: () => ({ text: 'injected falcon text' }), scoped: true },
  { method: 'POST', path: () => `${API}/knowledge-bases/${kb}/contents/file?wait=true`, body: uploadForm, scoped: true },
  { method: 'GET', path: () => `${API}/knowledge-bases/${kb}/contents/${content}`, scoped: true },
  {
    method: 'PUT',
    path: () => `${API}/knowledge-bases/${kb}/contents/${content}?wait=true`,
    body: () => ({ text: 'overwritten falcon', metadata: { owner: 'intruder' } }),
    scoped: true,
  },
  { method: 'DELETE', path: () => `${API}/knowledge-bases/${kb}/contents/${content}`, scoped: true },
  { method: 'POST', path: () => `${API}/knowledge-bases/${kb}/search/full-text`, body: () => ({ query: 'falcon' }), scoped: true },
  { method: 'POST', path: () => `${API}/knowledge-bases/${kb}/search/semantic`, body: () => ({ query: 'falcon' }), scoped: true },
  { method: 'POST', path: () => `${API}/knowledge-bases/${kb}/search/hybrid`, body: () => ({ query: 'falcon' }), scoped: true },
  // Beyond the contract's list: the re-index routes of this server.
  { method: 'POST', path: () => `${API}/knowledge-bases/${kb}/contents/${content}/reindex`, scoped: true },
  { method: 'POST', path: () => `${API}/knowledge-bases/${kb}/reindex-failed`, scoped: true },
];

const BAD_AUTH: [string, Auth][] = [
  ['no headers', null],
  ['key header missing', { org: ORG }],
  ['organization header missing', { key: KEY }],
  ['wrong key', { org: ORG, key: 'wrong-key-0123456789' }],
  ["the other organization's key for this organization", { org: ORG, key: OTHER_KEY }],
  ["this organization's key for the other organization", { org: OTHER_ORG, key: KEY }],
  ['unknown organization', { org: 'org_nobody', key: KEY }],
  ['empty values', { org: '', key: '' }],
  ['key with different case', { org: ORG, key: KEY.toUpperCase() }],
  ['key plus a character', { org: ORG, key: `${KEY}0` }],
  ['organization id with different case', { org: ORG.toUpperCase(), key: KEY }],
  ['organization id with a suffix', { org: `${ORG}x`, key: KEY }],
];

/** "GET /api/v1/knowledge-bases/:id/contents/:contentId" from the path template. */
const routeName = (route: Route) =>
  `${route.method} ${(/`(.*)`/.exec(route.path.toString())?.[1] ?? '?').replace('${API}', API).replace('${kb}', ':id').replace('${content}', ':contentId')}`;

const label = (route: Route) => `${route.method} ${route.path().replace(kb, ':id').replace(content, ':contentId')}`;

describe('auth matrix: every /api/v1 route', () => {
  for (const route of ROUTES) {
    test(routeName(route), async () => {
      const before = await bothStates();
      for (const [name, auth] of BAD_AUTH) {
        const res = await call(server, route.method, route.path(), route.body?.(), auth);
        expectErrorAnswer(res, 401, 'UNAUTHORIZED', `${label(route)} with ${name}`);
        expectNoData(res.raw, `${label(route)} with ${name}`);
      }
      expectSameState(before, await bothStates(), `${label(route)} without valid credentials`);

      // A valid other organization.
      const res: Answer = await call(server, route.method, route.path(), route.body?.(), OTHER);
      const what = `${label(route)} as the other organization`;
      expectNoData(res.raw, what);
      if (route.scoped) {
        expectErrorAnswer(res, 404, 'NOT_FOUND', what);
        expectSameState(before, await bothStates(), what);
      } else {
        // Its own collection: its own data only, and this organization's state untouched.
        expectEnvelope(res, what);
        expect(res.status).toBe(route.method === 'POST' ? 201 : 200);
        const mine = JSON.parse(before)[0];
        expectSameState(mine, await fingerprint(server), what);
        if (route.method === 'GET') expect(res.body.data.map((k: { id: string }) => k.id)).toEqual([foreignKb]);
        else {
          const del = await call(server, 'DELETE', `${API}/knowledge-bases/${res.body.data.id}`, undefined, OTHER);
          expect(del.status).toBe(200);
          expectSameState(before, await bothStates(), `${what} (after deleting what it created)`);
        }
      }
    }, 60_000);
  }

  test("the other organization's ids are 404 for this organization, and their data never shows", async () => {
    const before = await bothStates();
    for (const [method, path, body] of [
      ['GET', `${API}/knowledge-bases/${foreignKb}`],
      ['DELETE', `${API}/knowledge-bases/${foreignKb}`],
      ['GET', `${API}/knowledge-bases/${foreignKb}/contents`],
      ['POST', `${API}/knowledge-bases/${foreignKb}/search/full-text`, { query: 'falcon' }],
      ['POST', `${API}/knowledge-bases/${foreignKb}/contents`, { text: 'cross-tenant write' }],
    ] as [string, string, unknown?][]) {
      const res = await call(server, method, path, body);
      expectErrorAnswer(res, 404, 'NOT_FOUND', `${method} ${path} (foreign)`);
      expect(res.raw).not.toContain('their falcon plans');
    }
    expectSameState(before, await bothStates(), 'requests for the other organization');
  }, 60_000);
});

// --- raw sockets -------------------------------------------------------------------------------

const CREDS = `x-service-organization-id: ${ORG}\r\nx-service-api-key: ${KEY}\r\n`;
const ORG_ONLY = `x-service-organization-id: ${ORG}\r\n`;

function req(method: string, target: string, host: string | null, headers = '', body = ''): string {
  const hostLine = host === null ? '' : `Host: ${host}\r\n`;
  const length = body ? `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` : '';
  return `${method} ${target} HTTP/1.1\r\n${hostLine}${headers}${length}Connection: close\r\n\r\n${body}`;
}

/** Not a success, no data of this organization; when the server answered with a body, the envelope. */
function expectRefused(res: RawAnswer, statuses: number[], what: string): void {
  const where = `${what} → ${res.raw.slice(0, 300)}`;
  if (!statuses.includes(res.status)) throw new Error(`expected ${statuses.join('|')}: ${where}`);
  expectNoData(res.raw, what);
  expectRawEnvelope(res, what);
}

async function kbStillThere(): Promise<void> {
  const kbRes = await call(server, 'GET', `${API}/knowledge-bases/${kb}`);
  expect(kbRes.status).toBe(200);
  const item = await call(server, 'GET', `${API}/knowledge-bases/${kb}/contents/${content}`);
  expect(item.status).toBe(200);
  expect(item.body.data.contentChunk).toBe(SECRET_TEXT);
}

describe('raw requests', () => {
  test('a short Host with a path prefix before /api/v1 never reaches an API route (404 or 401, never data)', async () => {
    const before = await bothStates();
    for (const host of ['x', 'ab', 'abc', 'abcd', 'x:1', '127.0.0.1']) {
      for (const prefix of ['/z', '/zz', '/zzz', '/zzzz', '/api', '/v1', '/zz/']) {
        for (const [method, suffix] of [
          ['GET', `/api/v1/knowledge-bases/${kb}`],
          ['GET', `/api/v1/knowledge-bases/${kb}/contents`],
          ['DELETE', `/api/v1/knowledge-bases/${kb}`],
          ['POST', `/api/v1/knowledge-bases/${kb}/search/full-text`],
        ] as const) {
          const target = `${prefix}${suffix}`.replace('//', '/');
          const body = method === 'POST' ? '{"query":"falcon"}' : '';
          const res = await rawRequest(server, req(method, target, host, ORG_ONLY, body));
          expectRefused(res, [401, 404], `${method} ${target} Host: ${host} (organization header only)`);
        }
      }
    }
    await kbStillThere();
    expectSameState(before, await bothStates(), 'Host/path-prefix requests');
  }, 120_000);

  test('absolute-form targets without a key are 401 (and never data)', async () => {
    const before = await bothStates();
    const port = new URL(server.url).port;
    for (const [method, target] of [
      ['GET', `http://x/api/v1/knowledge-bases/${kb}`],
      ['GET', `http://x/api/v1/knowledge-bases/${kb}/contents/${content}`],
      ['DELETE', `http://x/api/v1/knowledge-bases/${kb}`],
      ['DELETE', `http://x/api/v1/knowledge-bases/${kb}/contents/${content}`],
      ['GET', `http://127.0.0.1:${port}/api/v1/knowledge-bases/${kb}`],
      ['GET', `http://localhost/api/v1/knowledge-bases`],
      ['POST', `http://x/api/v1/knowledge-bases/${kb}/search/full-text`],
    ] as const) {
      for (const host of ['x', 'localhost']) {
        const body = method === 'POST' ? '{"query":"falcon"}' : '';
        const res = await rawRequest(server, req(method, target, host, ORG_ONLY, body));
        expectRefused(res, [401], `${method} ${target} Host: ${host} (organization header only)`);
        expect(res.json.error.code).toBe('UNAUTHORIZED');
        const none = await rawRequest(server, req(method, target, host, '', body));
        expectRefused(none, [401], `${method} ${target} Host: ${host} (no credentials)`);
      }
    }
    // Absolute forms that hide or move the path: never a success.
    for (const target of [
      `http://x/zz/api/v1/knowledge-bases/${kb}`,
      `http://x?/api/v1/knowledge-bases/${kb}`,
      `http://x:1/api/v1/knowledge-bases/${kb}`,
      `http://a@x/api/v1/knowledge-bases/${kb}`,
      `//api/v1/knowledge-bases/${kb}`,
    ]) {
      const res = await rawRequest(server, req('GET', target, 'x', ORG_ONLY));
      if (res.status === 200 || res.status === 0) throw new Error(`GET ${target} → ${res.raw.slice(0, 300)}`);
      expectNoData(res.raw, `GET ${target}`);
      if (res.body.length > 0) expectRawEnvelope(res, `GET ${target}`);
    }
    await kbStillThere();
    expectSameState(before, await bothStates(), 'absolute-form requests');
  }, 120_000);

  test('malformed Host values are 400 VALIDATION_ERROR in the JSON envelope', async () => {
    const before = await bothStates();
    for (const host of ['', 'a b', 'a/b', 'a@b', 'a\\b', 'user:pw@x', 'x:99999999', 'x:port', '[::1', 'x/../y', '%2e', 'a,b']) {
      for (const [method, path, headers] of [
        ['GET', `${API}/knowledge-bases/${kb}`, CREDS],
        ['DELETE', `${API}/knowledge-bases/${kb}/contents/${content}`, CREDS],
        ['GET', `${API}/knowledge-bases`, ''],
        ['GET', '/health', ''],
      ] as const) {
        const res = await rawRequest(server, req(method, path, host, headers));
        const what = `${method} ${path} Host: ${JSON.stringify(host)}`;
        expectRefused(res, [400], what);
        expect(res.json.error.code).toBe('VALIDATION_ERROR');
      }
    }
    await kbStillThere();
    expectSameState(before, await bothStates(), 'malformed Host requests');
  }, 120_000);

  test('dot segments with a valid key never reach a parent route: 404, and the knowledge base and its contents stay', async () => {
    const before = await bothStates();
    const base = `${API}/knowledge-bases/${kb}`;
    const targets: [string, string][] = [
      ['DELETE', `${base}/contents/..`],
      ['DELETE', `${base}/contents/%2e%2e`],
      ['DELETE', `${base}/contents/%2E%2E`],
      ['DELETE', `${base}/contents/.%2E`],
      ['DELETE', `${base}/contents/%2e.`],
      ['DELETE', `${base}/contents/../`],
      ['DELETE', `${base}/contents/./..`],
      ['DELETE', `${base}/contents/.`],
      ['DELETE', `${base}/contents/./`],
      ['DELETE', `${base}/contents/%2e`],
      ['DELETE', `${base}/search/..`],
      ['DELETE', `${base}/search/%2e%2e`],
      ['DELETE', `${base}/search/../`],
      ['DELETE', `${base}/search/full-text/..`],
      ['DELETE', `${base}/search/full-text/../..`],
      ['DELETE', `${base}/configuration/..`],
      ['DELETE', `${base}/configuration/%2e%2e`],
      ['DELETE', `${base}/x/..`],
      ['DELETE', `${base}/.`],
      ['DELETE', `${base}/%2e`],
      ['DELETE', `${base}/contents/${content}/.`],
      ['DELETE', `${base}/contents/${content}/x/..`],
      ['DELETE', `${base}/contents/${content}/reindex/..`],
      ['DELETE', `${base}/contents/${content}/%2e`],
      ['PUT', `${base}/contents/..`],
      ['GET', `${base}/contents/${content}/..`],
      ['GET', `${base}/search/..`],
    ];
    for (const [method, target] of targets) {
      const body = method === 'PUT' ? '{"name":"Hacked","type":"TEXT_HIGH_QUALITY"}' : '';
      const res = await rawRequest(server, req(method, target, 'localhost', CREDS, body));
      expectRefused(res, [404], `${method} ${target}`);
      expect(res.json.error.code).toBe('NOT_FOUND');
      await kbStillThere();
    }
    expectSameState(before, await bothStates(), 'dot-segment requests');
  }, 120_000);

  test('a trailing slash is 404 (no loose match to the route without it)', async () => {
    const before = await bothStates();
    const base = `${API}/knowledge-bases/${kb}`;
    for (const [method, target] of [
      ['GET', `${base}/`],
      ['DELETE', `${base}/`],
      ['PUT', `${base}/`],
      ['GET', `${base}//`],
      ['GET', `${API}/knowledge-bases/`],
      ['GET', `${base}/contents/`],
      ['GET', `${base}/contents/${content}/`],
      ['DELETE', `${base}/contents/${content}/`],
      ['POST', `${base}/search/full-text/`],
    ] as const) {
      const body = method === 'PUT' ? '{"name":"Hacked","type":"TEXT_HIGH_QUALITY"}' : method === 'POST' ? '{"query":"falcon"}' : '';
      const res = await rawRequest(server, req(method, target, 'localhost', CREDS, body));
      expectRefused(res, [404], `${method} ${target}`);
      expect(res.json.error.code).toBe('NOT_FOUND');
    }
    await kbStillThere();
    expectSameState(before, await bothStates(), 'trailing-slash requests');
  }, 60_000);
});
