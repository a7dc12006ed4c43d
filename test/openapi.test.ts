// The OpenAPI document is complete and true: every operation has a summary, tags, its path
// parameters, its success answer and each error status it can give (the error envelope, what it
// means and an example), request bodies with examples; and real answers from a running server, for
// every operation and for its common errors, validate against the schema the document gives for
// that operation and status (ajv, a JSON Schema validator).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import Ajv, { type ValidateFunction } from 'ajv';
import { addContent, InProcessServer } from './helpers/server';

type Operation = Record<string, any>;
let server: InProcessServer;
let spec: any;
const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });

beforeAll(async () => {
  server = await InProcessServer.start({ env: { MAX_JSON_BODY_BYTES: String(64 * 1024) } });
  spec = await (await fetch(`${server.url}/openapi.json`)).json();
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

function operations(): { method: string; path: string; op: Operation }[] {
  return Object.entries(spec.paths as Record<string, Record<string, Operation>>).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ method, path, op })),
  );
}

/** The schema with every $ref into the document replaced by what it points at. */
function resolveRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(resolveRefs);
  if (!node || typeof node !== 'object') return node;
  const ref = (node as { $ref?: string }).$ref;
  if (typeof ref === 'string' && ref.startsWith('#/')) {
    return resolveRefs(
      ref
        .slice(2)
        .split('/')
        .reduce((at: any, key) => at[key], spec),
    );
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, resolveRefs(v)]));
}

const validators = new Map<string, ValidateFunction>();
/** The validator of the documented JSON answer of `method path` with `status`. */
function documented(method: string, path: string, status: number): ValidateFunction {
  const key = `${method} ${path} ${status}`;
  let validate = validators.get(key);
  if (!validate) {
    const answer = spec.paths[path]?.[method.toLowerCase()]?.responses?.[String(status)];
    if (!answer) throw new Error(`${key} is not documented`);
    validate = ajv.compile(resolveRefs(answer.content['application/json'].schema) as object);
    validators.set(key, validate);
  }
  return validate;
}

/** Checks a real answer against its documented schema; returns the body. */
async function expectDocumented(method: string, template: string, path: string, status: number, body?: unknown, auth?: null) {
  const res = await server.api(method, path, body, auth === null ? null : undefined);
  expect({ call: `${method} ${path}`, status: res.status }).toEqual({ call: `${method} ${path}`, status });
  const validate = documented(method, template, status);
  const valid = validate(res.body);
  expect({ call: `${method} ${path} ${status}`, errors: valid ? null : validate.errors }).toEqual({ call: `${method} ${path} ${status}`, errors: null });
  return res.body;
}

describe('every operation is documented', () => {
  test('summary, tags, path parameters, success answer, error answers with the envelope and an example', () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThanOrEqual(20);
    for (const { method, path, op } of ops) {
      const where = `${method.toUpperCase()} ${path}`;
      expect({ where, summary: typeof op.summary === 'string' && op.summary.length > 0, tags: op.tags?.length > 0 }).toEqual({
        where,
        summary: true,
        tags: true,
      });
      for (const param of path.match(/\{(\w+)\}/g) ?? []) {
        const name = param.slice(1, -1);
        expect({ where, param: name, documented: (op.parameters ?? []).some((p: any) => p.in === 'path' && p.name === name && p.required) }).toEqual({
          where,
          param: name,
          documented: true,
        });
      }
      const statuses = Object.keys(op.responses ?? {}).map(Number);
      const success = statuses.filter((s) => s >= 200 && s < 300);
      expect({ where, success: success.length }).toEqual({ where, success: 1 });
      const successContent = op.responses[String(success[0])].content;
      expect({ where, successSchema: Boolean(successContent?.['application/json']?.schema ?? successContent?.['text/plain']?.schema) }).toEqual({
        where,
        successSchema: true,
      });

      const api = path.startsWith('/api/v1/');
      const expected = new Set<number>(api ? [401, 429, 500] : []);
      if (api && path.includes('{')) expected.add(404);
      if (op.requestBody) [400, 413].forEach((s) => expected.add(s));
      if (path === '/ready') expected.add(503);
      for (const status of expected) expect({ where, status, documented: statuses.includes(status) }).toEqual({ where, status, documented: true });
      for (const status of statuses.filter((s) => s >= 400)) {
        const answer = op.responses[String(status)];
        const schema = resolveRefs(answer.content?.['application/json']?.schema) as any;
        expect({ where, status, envelope: Object.keys(schema?.properties ?? {}).sort(), example: schema?.examples?.[0]?.success }).toEqual({
          where,
          status,
          envelope: ['error', 'success'],
          example: false,
        });
        expect({ where, status, described: answer.description.startsWith('Response for status') }).toEqual({ where, status, described: false });
      }
      // Authentication: every /api/v1 operation falls under the document's security; the others need none.
      expect({ where, security: op.security ?? spec.security }).toEqual({ where, security: api ? [{ apiKey: [], organization: [] }] : [] });
      if (op.requestBody && !path.endsWith('/contents/file')) {
        // JSON, or JSON Lines for the bulk import.
        const schema = (op.requestBody.content['application/json'] ?? op.requestBody.content['application/x-ndjson']).schema;
        expect({ where, bodyExamples: schema.examples?.length > 0 }).toEqual({ where, bodyExamples: true });
      }
    }
  });

  test('query parameters are documented where routes read them', () => {
    const params = (method: string, path: string) =>
      (spec.paths[path][method].parameters ?? [])
        .filter((p: any) => p.in === 'query')
        .map((p: any) => p.name)
        .sort();
    expect(params('get', '/api/v1/knowledge-bases')).toEqual(['limit', 'page']);
    expect(params('get', '/api/v1/knowledge-bases/{id}/contents')).toEqual(['limit', 'page']);
    expect(params('post', '/api/v1/knowledge-bases/{id}/contents')).toEqual(['wait']);
    expect(params('put', '/api/v1/knowledge-bases/{id}/contents/{contentId}')).toEqual(['wait']);
    expect(params('post', '/api/v1/knowledge-bases/{id}/contents/file')).toEqual(['wait']);
  });
});

describe('real answers validate against the documented schemas', () => {
  const KBS = '/api/v1/knowledge-bases';

  test('every operation, success and errors', async () => {
    await expectDocumented('GET', '/health', '/health', 200);
    await expectDocumented('GET', '/ready', '/ready', 200);
    const metrics = await fetch(`${server.url}/metrics`);
    expect(metrics.headers.get('content-type')).toStartWith('text/plain');

    const created = await expectDocumented('POST', KBS, KBS, 201, { name: 'Documented', type: 'TEXT_COST_EFFECTIVE' });
    const kb = created.data.id as string;
    await expectDocumented('GET', KBS, KBS, 200);
    await expectDocumented('GET', `${KBS}/{id}`, `${KBS}/${kb}`, 200);
    await expectDocumented('PUT', `${KBS}/{id}`, `${KBS}/${kb}`, 200, {
      name: 'Documented',
      description: 'Answers checked against the document',
      type: 'TEXT_COST_EFFECTIVE',
    });
    await expectDocumented('GET', `${KBS}/{id}/configuration`, `${KBS}/${kb}/configuration`, 200);

    const added = await expectDocumented('POST', `${KBS}/{id}/contents`, `${KBS}/${kb}/contents?wait=true`, 201, {
      text: 'Refunds are issued within 14 days.',
      metadata: { team: 'billing' },
    });
    const item = added.data.id as string;
    await addContent(server, kb, 'Passwords are reset from the account page.');
    await expectDocumented('GET', `${KBS}/{id}/contents`, `${KBS}/${kb}/contents`, 200);
    await expectDocumented('GET', `${KBS}/{id}/contents/{contentId}`, `${KBS}/${kb}/contents/${item}`, 200);
    await expectDocumented('PUT', `${KBS}/{id}/contents/{contentId}`, `${KBS}/${kb}/contents/${item}?wait=true`, 200, {
      text: 'Refunds are issued within 14 days of a return.',
    });
    await expectDocumented('PUT', `${KBS}/{id}/contents/{contentId}`, `${KBS}/${kb}/contents/${item}`, 200, {
      text: 'Refunds are issued within 14 days of a return.',
    });
    await expectDocumented('POST', `${KBS}/{id}/contents/{contentId}/reindex`, `${KBS}/${kb}/contents/${item}/reindex`, 200);
    await expectDocumented('POST', `${KBS}/{id}/reindex-failed`, `${KBS}/${kb}/reindex-failed`, 200);
    await expectDocumented('POST', `${KBS}/{id}/reembed`, `${KBS}/${kb}/reembed`, 200);
    for (const mode of ['full-text', 'semantic', 'hybrid']) {
      const hits = await expectDocumented('POST', `${KBS}/{id}/search/${mode}`, `${KBS}/${kb}/search/${mode}`, 200, { query: 'refund', limit: 5 });
      expect(hits.data.length).toBeGreaterThan(0);
    }

    const form = new FormData();
    form.append('file', new File(['# Notes\n\nUploaded and documented.'], 'notes.md', { type: 'text/markdown' }));
    form.append('metadata', JSON.stringify({ team: 'docs' }));
    const upload = await fetch(`${server.url}${KBS}/${kb}/contents/file`, {
      method: 'POST',
      headers: { 'x-service-organization-id': 'org_test', 'x-service-api-key': 'test-key-0123456789' },
      body: form,
    });
    expect(upload.status).toBe(201);
    expect(documented('POST', `${KBS}/{id}/contents/file`, 201)(await upload.json())).toBe(true);

    const imported = await fetch(`${server.url}${KBS}/${kb}/contents/import?wait=true`, {
      method: 'POST',
      headers: { 'x-service-organization-id': 'org_test', 'x-service-api-key': 'test-key-0123456789', 'content-type': 'application/x-ndjson' },
      body: '{"text":"Imported and documented.","metadata":{"team":"docs"}}\n{"text":"A second imported line."}\n',
    });
    expect(imported.status).toBe(201);
    expect(documented('POST', `${KBS}/{id}/contents/import`, 201)(await imported.json())).toBe(true);
    const badImport = await fetch(`${server.url}${KBS}/${kb}/contents/import`, {
      method: 'POST',
      headers: { 'x-service-organization-id': 'org_test', 'x-service-api-key': 'test-key-0123456789', 'content-type': 'application/x-ndjson' },
      body: '{"text":"fine"}\n{"text":""}\n',
    });
    expect(badImport.status).toBe(400);
    expect(documented('POST', `${KBS}/{id}/contents/import`, 400)(await badImport.json())).toBe(true);

    // Errors: validation, authentication, absent resources, a body over the limit.
    await expectDocumented('POST', KBS, KBS, 400, { name: '', type: 'FOO' });
    await expectDocumented('GET', KBS, `${KBS}?limit=0`, 400);
    await expectDocumented('POST', `${KBS}/{id}/search/hybrid`, `${KBS}/${kb}/search/hybrid`, 400, { query: 'x', semanticWeight: 2 });
    await expectDocumented('GET', KBS, KBS, 401, undefined, null);
    await expectDocumented('GET', `${KBS}/{id}`, `${KBS}/kb_missing`, 404);
    await expectDocumented('GET', `${KBS}/{id}/contents/{contentId}`, `${KBS}/${kb}/contents/ct_missing`, 404);
    await expectDocumented('POST', `${KBS}/{id}/contents`, `${KBS}/${kb}/contents`, 413, { text: 'x'.repeat(100 * 1024) });

    await expectDocumented('DELETE', `${KBS}/{id}/contents/{contentId}`, `${KBS}/${kb}/contents/${item}`, 200);
    await expectDocumented('DELETE', `${KBS}/{id}`, `${KBS}/${kb}`, 200);
  }, 60_000);

  test('the check can fail: an answer missing a documented field does not validate', () => {
    const validate = documented('GET', `${KBS}/{id}`, 200);
    expect(validate({ success: true })).toBe(false);
    expect(documented('GET', `${KBS}/{id}`, 404)({ success: false, error: { message: 'no code' } })).toBe(false);
  });
});
