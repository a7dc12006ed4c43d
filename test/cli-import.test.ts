// `kb-search import <kbId> <file.jsonl>` against a real server: a file larger than one request is
// sent in parts and indexed; a bad line stops the import naming its line in the file (not in the
// part), and says which lines were imported.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createKb, KEY, ORG, TestServer } from './helpers/server';

const ROOT = resolve(import.meta.dir, '..');
const work = mkdtempSync(join(tmpdir(), 'kb-cli-import-'));
let server: TestServer;

function cli(args: string[]) {
  const run = Bun.spawnSync(['bun', join(ROOT, 'src', 'cli', 'main.ts'), ...args], {
    cwd: work,
    env: { ...process.env, KB_URL: server.url, KB_ORG: ORG, KB_KEY: KEY },
  });
  const stderr = run.stderr.toString();
  expect(stderr).not.toMatch(/^\s+at /m); // never a stack trace
  return { code: run.exitCode, stdout: run.stdout.toString(), stderr };
}

beforeAll(async () => {
  server = await TestServer.start();
});
afterAll(async () => {
  await server.stop();
  server.cleanup();
  rmSync(work, { recursive: true, force: true });
});

test('imports a file in parts, waits for indexing, and the items are searchable', async () => {
  const kb = await createKb(server, 'CLI import');
  const lines = Array.from({ length: 250 }, (_, i) => JSON.stringify({ text: `Line ${i}: tapirs browse at night.`, metadata: { line: i + 1 } }));
  writeFileSync(join(work, 'items.jsonl'), `${lines.join('\n')}\n`);
  const run = cli(['import', kb, 'items.jsonl', '--batch', '100']);
  expect(run.code).toBe(0);
  expect(run.stdout).toContain('250 items imported');
  expect(run.stdout).toContain('0 failed to index');
  const list = await server.api('GET', `/api/v1/knowledge-bases/${kb}/contents?limit=100&page=3`);
  expect(list.body.total).toBe(250);
  // In file order across the parts.
  expect(list.body.data.map((c: { metadata: { line: number } }) => c.metadata.line)).toEqual(Array.from({ length: 50 }, (_, i) => 201 + i));
  const hits = await server.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query: 'tapirs', limit: 100 });
  expect(hits.body.data.length).toBe(100);
}, 120_000);

test('a bad line stops the import, naming its line in the file', async () => {
  const kb = await createKb(server, 'CLI import bad');
  const lines = Array.from({ length: 30 }, (_, i) => JSON.stringify({ text: `Okapi note ${i}.` }));
  lines[24] = JSON.stringify({ text: '   ' });
  writeFileSync(join(work, 'bad.jsonl'), `${lines.join('\n')}\n`);
  const run = cli(['import', kb, 'bad.jsonl', '--batch', '10', '--concurrency', '1', '--no-wait']);
  expect(run.code).toBe(1);
  expect(run.stderr).toContain('line 25');
  expect(run.stderr).toContain('/lines/25/text');
  expect(run.stderr).toContain('lines 21–30 were not imported');
  expect(run.stdout).toContain('imported lines: 1–20');
  expect((await server.api('GET', `/api/v1/knowledge-bases/${kb}/contents`)).body.total).toBe(20);
  // The rest, resumed after the fixed line.
  lines[24] = JSON.stringify({ text: 'Okapi note 24, fixed.' });
  writeFileSync(join(work, 'bad.jsonl'), `${lines.join('\n')}\n`);
  const resumed = cli(['import', kb, 'bad.jsonl', '--skip-lines', '20', '--no-wait']);
  expect(resumed.code).toBe(0);
  expect(resumed.stdout).toContain('10 items imported');
  expect((await server.api('GET', `/api/v1/knowledge-bases/${kb}/contents`)).body.total).toBe(30);
}, 120_000);

test('a missing file or knowledge base is one readable error', async () => {
  const kb = await createKb(server, 'CLI import missing');
  expect(cli(['import', kb, 'nope.jsonl']).stderr).toContain('no such file: nope.jsonl');
  writeFileSync(join(work, 'one.jsonl'), '{"text":"x"}\n');
  const missing = cli(['import', 'kb_missing', 'one.jsonl']);
  expect(missing.code).toBe(1);
  expect(missing.stderr).toMatch(/not found/i);
});
