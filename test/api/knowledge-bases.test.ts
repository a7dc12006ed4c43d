// Knowledge-base endpoints over real HTTP: create, list, get, configuration, update, delete, and
// the validation and not-found rows of decisions.md.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { addContent, createKb, KEY, ORG, OTHER_KEY, OTHER_ORG, InProcessServer } from '../helpers/server';
import { API, expectError, expectIsoMs, expectNamesField, expectValidation, unknownId } from './util';

let server: InProcessServer;
const other = { org: OTHER_ORG, key: OTHER_KEY };

beforeAll(async () => {
  server = await InProcessServer.start();
});

afterAll(async () => {
  await server?.stop();
  server?.cleanup();
});

const KB_FIELDS = ['activeKnowledgeBaseConfigurationId', 'createdAt', 'description', 'embeddingModel', 'id', 'name', 'updatedAt'];

/** A knowledge base read; its ingestion progress (only the single read has it) is checked and left out. */
async function getKb(id: string) {
  const res = await server.api('GET', `${API}/knowledge-bases/${id}`);
  expect(res.status).toBe(200);
  expect(res.body.success).toBe(true);
  const { ingestion, reembedding, ...kb } = res.body.data;
  expect(Object.keys(ingestion).sort()).toEqual(['chunksPerSecond', 'chunksWaiting', 'contents', 'etaSeconds']);
  // Null unless the knowledge base is being re-embedded (test/reembed.test.ts).
  expect(reembedding).toBeNull();
  return kb;
}

async function listIds(auth = { org: ORG, key: KEY }): Promise<string[]> {
  const res = await server.api('GET', `${API}/knowledge-bases`, undefined, auth);
  expect(res.status).toBe(200);
  return res.body.data.map((kb: { id: string }) => kb.id);
}

describe('POST /knowledge-bases', () => {
  test('creates a knowledge base: 201 with { success, data: { id } } and a kb_ id', async () => {
    const res = await server.api('POST', `${API}/knowledge-bases`, { name: 'Support', description: 'Help center', type: 'TEXT_HIGH_QUALITY' });
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    expect(Object.keys(res.body).sort()).toEqual(['data', 'success']);
    expect(Object.keys(res.body.data)).toEqual(['id']);
    expect(res.body.data.id).toMatch(/^kb_[0-9a-z]+$/);
    const kb = await getKb(res.body.data.id);
    expect(kb.name).toBe('Support');
    expect(kb.description).toBe('Help center');
  });

  test('every type of the enum is accepted and each create gets a new id', async () => {
    const ids = new Set<string>();
    for (const type of ['TEXT_COST_EFFECTIVE', 'TEXT_HIGH_QUALITY', 'TEXT_AND_MEDIA_HIGH_QUALITY']) {
      const res = await server.api('POST', `${API}/knowledge-bases`, { name: `typed ${type}`, type });
      expect(res.status).toBe(201);
      ids.add(res.body.data.id);
    }
    expect(ids.size).toBe(3);
  });

  test('the name is trimmed; description defaults to an empty string', async () => {
    const id = await createKb(server, '   Padded name  ');
    const kb = await getKb(id);
    expect(kb.name).toBe('Padded name');
    expect(kb.description).toBe('');
  });

  test('name of exactly 256 characters and description of exactly 4096 are accepted', async () => {
    const name = 'n'.repeat(256);
    const description = 'd'.repeat(4096);
    const res = await server.api('POST', `${API}/knowledge-bases`, { name, description, type: 'TEXT_COST_EFFECTIVE' });
    expect(res.status).toBe(201);
    const kb = await getKb(res.body.data.id);
    expect(kb.name).toBe(name);
    expect(kb.description).toBe(description);
  });

  test('the 256-character limit applies after trimming (a padded 256-character name is accepted)', async () => {
    const name = 'p'.repeat(256);
    const res = await server.api('POST', `${API}/knowledge-bases`, { name: `  ${name}  `, type: 'TEXT_COST_EFFECTIVE' });
    expect(res.status).toBe(201);
    expect((await getKb(res.body.data.id)).name).toBe(name);
  });
});

describe('POST /knowledge-bases validation', () => {
  const rows: [string, unknown, string | undefined][] = [
    ['missing name', { type: 'TEXT_HIGH_QUALITY' }, 'name'],
    ['empty name', { name: '', type: 'TEXT_HIGH_QUALITY' }, 'name'],
    ['blank name', { name: '   ', type: 'TEXT_HIGH_QUALITY' }, 'name'],
    ['name of 257 characters', { name: 'x'.repeat(257), type: 'TEXT_HIGH_QUALITY' }, 'name'],
    ['name that is a number', { name: 42, type: 'TEXT_HIGH_QUALITY' }, 'name'],
    ['description of 4097 characters', { name: 'ok', description: 'y'.repeat(4097), type: 'TEXT_HIGH_QUALITY' }, 'description'],
    ['description that is not a string', { name: 'ok', description: 5, type: 'TEXT_HIGH_QUALITY' }, 'description'],
    ['missing type', { name: 'ok' }, 'type'],
    ['unknown type', { name: 'ok', type: 'TEXT_SUPREME' }, 'type'],
    ['lower-case type', { name: 'ok', type: 'text_high_quality' }, 'type'],
    ['unknown field', { name: 'ok', type: 'TEXT_HIGH_QUALITY', color: 'blue' }, 'color'],
  ];
  for (const [label, body, field] of rows) {
    test(`${label} → 400 VALIDATION_ERROR naming '${field}', nothing created`, async () => {
      const before = await listIds();
      const res = await server.api('POST', `${API}/knowledge-bases`, body);
      expectValidation(res, field);
      expect(await listIds()).toEqual(before);
    });
  }

  test('invalid JSON → 400 INVALID_JSON', async () => {
    const before = await listIds();
    const res = await server.api('POST', `${API}/knowledge-bases`, '{"name": "x", "type": ');
    expectError(res, 400, 'INVALID_JSON');
    expect(await listIds()).toEqual(before);
  });

  for (const raw of ['[]', '"a string"', '42', 'null', 'true']) {
    test(`non-object JSON body ${raw} → 400`, async () => {
      const res = await server.api('POST', `${API}/knowledge-bases`, raw);
      expect(res.status).toBe(400);
      expect(['VALIDATION_ERROR', 'INVALID_JSON']).toContain(res.body.error.code);
      expectError(res, 400, res.body.error.code);
    });
  }

  test('empty body → 400', async () => {
    const res = await server.api('POST', `${API}/knowledge-bases`, '');
    expect(res.status).toBe(400);
    expect(['VALIDATION_ERROR', 'INVALID_JSON']).toContain(res.body.error.code);
    expectError(res, 400, res.body.error.code);
  });
});

describe('GET /knowledge-bases', () => {
  test('lists only the own organization, oldest first, with the documented fields and no type', async () => {
    const mine = [await createKb(server, 'List A'), await createKb(server, 'List B'), await createKb(server, 'List C')];
    const foreign = await server.api('POST', `${API}/knowledge-bases`, { name: 'Foreign', type: 'TEXT_HIGH_QUALITY' }, other);
    expect(foreign.status).toBe(201);

    const res = await server.api('GET', `${API}/knowledge-bases`);
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    const list = res.body.data as any[];
    const ids = list.map((kb) => kb.id);
    expect(ids).not.toContain(foreign.body.data.id);
    // The three just created appear in creation order, after everything created before them.
    const at = mine.map((id) => ids.indexOf(id));
    expect(at.every((i) => i >= 0)).toBe(true);
    expect(at).toEqual([...at].sort((a, b) => a - b));
    // Whole list: createdAt ascending, id as tie-break.
    for (let i = 1; i < list.length; i++) {
      const [a, b] = [list[i - 1], list[i]];
      expect(a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.id < b.id)).toBe(true);
    }
    for (const kb of list) {
      expect(Object.keys(kb).sort()).toEqual(KB_FIELDS);
      expect(kb).not.toHaveProperty('type');
      expect(kb.id).toMatch(/^kb_/);
      expect(kb.activeKnowledgeBaseConfigurationId).toMatch(/^cfg_/);
      expect(kb.embeddingModel).toBe('Xenova/all-MiniLM-L6-v2'); // the shipped model serves every type by default
      expectIsoMs(kb.createdAt);
      expectIsoMs(kb.updatedAt);
      expect(typeof kb.name).toBe('string');
      expect(typeof kb.description).toBe('string');
    }

    const otherList = await listIds(other);
    expect(otherList).toContain(foreign.body.data.id);
    for (const id of mine) expect(otherList).not.toContain(id);
  });
});

describe('GET /knowledge-bases/:id and /configuration', () => {
  test('get returns the record with the documented fields', async () => {
    const before = Date.now();
    const res = await server.api('POST', `${API}/knowledge-bases`, { name: 'Getter', description: 'desc', type: 'TEXT_AND_MEDIA_HIGH_QUALITY' });
    const id = res.body.data.id;
    const kb = await getKb(id);
    expect(Object.keys(kb).sort()).toEqual(KB_FIELDS);
    expect(kb).toMatchObject({ id, name: 'Getter', description: 'desc' });
    expect(kb).not.toHaveProperty('type');
    expect(kb.activeKnowledgeBaseConfigurationId).toMatch(/^cfg_/);
    expectIsoMs(kb.createdAt);
    expectIsoMs(kb.updatedAt);
    expect(kb.updatedAt).toBe(kb.createdAt);
    const created = Date.parse(kb.createdAt);
    expect(created).toBeGreaterThanOrEqual(before - 1000);
    expect(created).toBeLessThanOrEqual(Date.now() + 1000);
    // The same record appears in the list.
    const list = await server.api('GET', `${API}/knowledge-bases`);
    expect(list.body.data.find((k: { id: string }) => k.id === id)).toEqual(kb);
  });

  test('configuration: its id is the activeKnowledgeBaseConfigurationId, and it records the type', async () => {
    const res = await server.api('POST', `${API}/knowledge-bases`, { name: 'Configured', type: 'TEXT_COST_EFFECTIVE' });
    const id = res.body.data.id;
    const kb = await getKb(id);
    const cfg = await server.api('GET', `${API}/knowledge-bases/${id}/configuration`);
    expect(cfg.status).toBe(200);
    expect(cfg.body.success).toBe(true);
    const data = cfg.body.data;
    expect(data.id).toBe(kb.activeKnowledgeBaseConfigurationId);
    expect(data.id).toMatch(/^cfg_/);
    expect(data.knowledgeBaseId).toBe(id);
    expect(data.type).toBe('TEXT_COST_EFFECTIVE');
    for (const field of ['embedding', 'chunking', 'bm25', 'hnsw', 'modalities', 'createdAt']) expect(data).toHaveProperty(field);
    expect(typeof data.embedding.model).toBe('string');
    expect(typeof data.embedding.dimensions).toBe('number');
    expect(typeof data.embedding.metric).toBe('string');
    expect(typeof data.embedding.quantization).toBe('string');
    expect(data.chunking.size).toBeGreaterThan(0);
    expect(data.chunking.overlap).toBeGreaterThanOrEqual(0);
    expect(data.modalities).toEqual(['text']);
    expectIsoMs(data.createdAt);

    const media = await server.api('POST', `${API}/knowledge-bases`, { name: 'Media', type: 'TEXT_AND_MEDIA_HIGH_QUALITY' });
    const mcfg = await server.api('GET', `${API}/knowledge-bases/${media.body.data.id}/configuration`);
    expect(mcfg.body.data.type).toBe('TEXT_AND_MEDIA_HIGH_QUALITY');
    expect(mcfg.body.data.modalities).toContain('image');
    expect(mcfg.body.data.id).not.toBe(data.id);
  });
});

describe('PUT /knowledge-bases/:id', () => {
  test('renames (trimmed), bumps updatedAt, keeps createdAt, id and configuration', async () => {
    const res = await server.api('POST', `${API}/knowledge-bases`, { name: 'Old', description: 'keep me', type: 'TEXT_HIGH_QUALITY' });
    const id = res.body.data.id;
    const before = await getKb(id);
    await Bun.sleep(5);
    const put = await server.api('PUT', `${API}/knowledge-bases/${id}`, { name: '  New name  ', type: 'TEXT_HIGH_QUALITY' });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ success: true });
    const after = await getKb(id);
    expect(after.name).toBe('New name');
    expect(after.description).toBe('keep me');
    expect(after.id).toBe(id);
    expect(after.createdAt).toBe(before.createdAt);
    expect(after.activeKnowledgeBaseConfigurationId).toBe(before.activeKnowledgeBaseConfigurationId);
    expectIsoMs(after.updatedAt);
    expect(Date.parse(after.updatedAt)).toBeGreaterThan(Date.parse(before.updatedAt));
  });

  test('may carry a description, which replaces the old one', async () => {
    const res = await server.api('POST', `${API}/knowledge-bases`, { name: 'Desc', description: 'first', type: 'TEXT_HIGH_QUALITY' });
    const id = res.body.data.id;
    const put = await server.api('PUT', `${API}/knowledge-bases/${id}`, { name: 'Desc', description: 'second', type: 'TEXT_HIGH_QUALITY' });
    expect(put.status).toBe(200);
    expect((await getKb(id)).description).toBe('second');
  });

  test('a different type → 400 KB_TYPE_IMMUTABLE and nothing changes', async () => {
    const id = await createKb(server, 'Immutable', 'TEXT_HIGH_QUALITY');
    const before = await getKb(id);
    const cfgBefore = await server.api('GET', `${API}/knowledge-bases/${id}/configuration`);
    await Bun.sleep(5);
    const put = await server.api('PUT', `${API}/knowledge-bases/${id}`, { name: 'Renamed?', description: 'changed?', type: 'TEXT_COST_EFFECTIVE' });
    expectError(put, 400, 'KB_TYPE_IMMUTABLE');
    expect(await getKb(id)).toEqual(before);
    const cfgAfter = await server.api('GET', `${API}/knowledge-bases/${id}/configuration`);
    expect(cfgAfter.body).toEqual(cfgBefore.body);
  });

  const rows: [string, unknown, string][] = [
    ['missing name', { type: 'TEXT_HIGH_QUALITY' }, 'name'],
    ['blank name', { name: '  ', type: 'TEXT_HIGH_QUALITY' }, 'name'],
    ['name of 257 characters', { name: 'z'.repeat(257), type: 'TEXT_HIGH_QUALITY' }, 'name'],
    ['description of 4097 characters', { name: 'ok', description: 'q'.repeat(4097), type: 'TEXT_HIGH_QUALITY' }, 'description'],
    ['missing type', { name: 'ok' }, 'type'],
    ['bad type', { name: 'ok', type: 'NOPE' }, 'type'],
    ['unknown field', { name: 'ok', type: 'TEXT_HIGH_QUALITY', extra: 1 }, 'extra'],
  ];
  for (const [label, body, field] of rows) {
    test(`PUT ${label} → 400 VALIDATION_ERROR naming '${field}', nothing changes`, async () => {
      const id = await createKb(server, 'Put validation');
      const before = await getKb(id);
      const res = await server.api('PUT', `${API}/knowledge-bases/${id}`, body);
      expectValidation(res, field);
      expect(await getKb(id)).toEqual(before);
    });
  }

  test('PUT: the 256-character limit applies after trimming (a padded 256-character name is accepted)', async () => {
    const id = await createKb(server, 'Put padded');
    const name = 'r'.repeat(256);
    const res = await server.api('PUT', `${API}/knowledge-bases/${id}`, { name: ` ${name} `, type: 'TEXT_HIGH_QUALITY' });
    expect(res.status).toBe(200);
    expect((await getKb(id)).name).toBe(name);
  });

  test('PUT with invalid JSON → 400 INVALID_JSON', async () => {
    const id = await createKb(server, 'Put json');
    const res = await server.api('PUT', `${API}/knowledge-bases/${id}`, '{"name":');
    expectError(res, 400, 'INVALID_JSON');
  });
});

describe('DELETE /knowledge-bases/:id', () => {
  test('deletes the KB and everything under it; a second delete is 404', async () => {
    const id = await createKb(server, 'Doomed');
    const contentId = await addContent(server, id, 'ephemeral pelican content');
    const found = await server.api('POST', `${API}/knowledge-bases/${id}/search/full-text`, { query: 'pelican' });
    expect(found.body.data.length).toBe(1);

    const del = await server.api('DELETE', `${API}/knowledge-bases/${id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });

    expectError(await server.api('GET', `${API}/knowledge-bases/${id}`), 404, 'NOT_FOUND');
    expectError(await server.api('GET', `${API}/knowledge-bases/${id}/configuration`), 404, 'NOT_FOUND');
    expectError(await server.api('GET', `${API}/knowledge-bases/${id}/contents`), 404, 'NOT_FOUND');
    expectError(await server.api('GET', `${API}/knowledge-bases/${id}/contents/${contentId}`), 404, 'NOT_FOUND');
    expectError(await server.api('POST', `${API}/knowledge-bases/${id}/contents`, { text: 'more' }), 404, 'NOT_FOUND');
    expectError(await server.api('POST', `${API}/knowledge-bases/${id}/search/full-text`, { query: 'pelican' }), 404, 'NOT_FOUND');
    expectError(await server.api('PUT', `${API}/knowledge-bases/${id}`, { name: 'zombie', type: 'TEXT_HIGH_QUALITY' }), 404, 'NOT_FOUND');
    expectError(await server.api('DELETE', `${API}/knowledge-bases/${id}`), 404, 'NOT_FOUND');
    expect(await listIds()).not.toContain(id);
  });

  test('deleting one KB leaves the others intact', async () => {
    const keep = await createKb(server, 'Keeper');
    await addContent(server, keep, 'surviving walrus');
    const drop = await createKb(server, 'Dropper');
    await addContent(server, drop, 'surviving walrus');
    expect((await server.api('DELETE', `${API}/knowledge-bases/${drop}`)).status).toBe(200);
    const search = await server.api('POST', `${API}/knowledge-bases/${keep}/search/full-text`, { query: 'walrus' });
    expect(search.status).toBe(200);
    expect(search.body.data.length).toBe(1);
    expect((await getKb(keep)).name).toBe('Keeper');
  });
});

describe('malformed and unknown ids → 404 NOT_FOUND', () => {
  const ids = ['nope', 'kb_', 'kb_xyz', unknownId('kb'), unknownId('ct'), `KB_${'0'.repeat(28)}`, '%20', `kb_${'f'.repeat(40)}`];
  for (const id of ids) {
    test(`id "${id}"`, async () => {
      const p = `${API}/knowledge-bases/${id}`;
      expectError(await server.api('GET', p), 404, 'NOT_FOUND');
      expectError(await server.api('GET', `${p}/configuration`), 404, 'NOT_FOUND');
      expectError(await server.api('PUT', p, { name: 'x', type: 'TEXT_HIGH_QUALITY' }), 404, 'NOT_FOUND');
      expectError(await server.api('DELETE', p), 404, 'NOT_FOUND');
    });
  }

  test('a content id or configuration id used as a KB id is 404', async () => {
    const kbId = await createKb(server, 'Id kinds');
    const contentId = await addContent(server, kbId, 'some text');
    const cfgId = (await getKb(kbId)).activeKnowledgeBaseConfigurationId;
    for (const id of [contentId, cfgId]) {
      expectError(await server.api('GET', `${API}/knowledge-bases/${id}`), 404, 'NOT_FOUND');
      expectError(await server.api('DELETE', `${API}/knowledge-bases/${id}`), 404, 'NOT_FOUND');
    }
    expect((await getKb(kbId)).name).toBe('Id kinds');
  });

  test('the error of a 404 names no internals', async () => {
    const res = await server.api('GET', `${API}/knowledge-bases/${unknownId('kb')}`);
    expectError(res, 404, 'NOT_FOUND');
    expectNamesField(res, 'not found');
  });
});
