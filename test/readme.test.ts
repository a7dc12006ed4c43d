// The README's "Try it" block runs as pasted: against a real server started with the README's
// organization and key, only the URL changed to this server's.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { InProcessServer } from './helpers/server';

const ROOT = resolve(import.meta.dir, '..');
let server: InProcessServer;

beforeAll(async () => {
  // The README's defaults: the model that ships with the server.
  server = await InProcessServer.start({ env: { KB_API_KEYS: 'org-demo:change-me' } });
});
afterAll(async () => {
  await server.stop();
  server.cleanup();
});

test('"Try it" runs as pasted: a knowledge base, an item, three searches and the progress', async () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = /<!-- try-it[^>]*-->\n```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!block) throw new Error('README has no try-it block');
  expect(block).toContain('URL=localhost:3000\n');
  const script = block.replace('URL=localhost:3000\n', `URL=${server.url}\n`);
  // Asynchronously: the server runs in this process, and a blocking spawn would stop it answering.
  const run = Bun.spawn(['sh', '-c', script], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
  expect(stderr).toBe('');
  expect(exitCode).toBe(0);
  const lines = stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  expect(lines).toHaveLength(4);
  expect(lines[0]).toMatchObject({ success: true, data: { status: 'ready' } });
  expect(lines[1].data[0].contentChunk).toBe('Refunds are issued within 14 days.');
  expect(lines[2].data[0]).toMatchObject({ contentChunk: 'Refunds are issued within 14 days.' });
  expect(lines[3].data).toMatchObject({ name: 'Docs', ingestion: { contents: { ready: 1 } } });
}, 60_000);

test('"Your own files" runs as pasted: a folder ingested with the CLI, then searched', async () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = /<!-- own-files[^>]*-->\n```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!block) throw new Error('README has no own-files block');
  expect(block).toContain('KB_URL=http://localhost:3000 ');
  const work = mkdtempSync(join(tmpdir(), 'kb-readme-files-'));
  try {
    mkdirSync(join(work, 'docs', 'policies'), { recursive: true });
    writeFileSync(join(work, 'docs', 'refunds.md'), '# Refunds\n\nRefunds are issued within 14 days of a return.');
    writeFileSync(join(work, 'docs', 'policies', 'shipping.txt'), 'Shipping takes three to five business days.');
    writeFileSync(join(work, 'docs', 'logo.bin'), new Uint8Array([0, 1, 2, 0, 255]));
    // Run from a folder holding ./docs; `bun run cli` finds the checkout's package.json through a link.
    symlinkSync(join(ROOT, 'package.json'), join(work, 'package.json'));
    symlinkSync(join(ROOT, 'src'), join(work, 'src'));
    symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'));
    const script = block.replace('KB_URL=http://localhost:3000 ', `KB_URL=${server.url} `);
    const run = Bun.spawn(['sh', '-ec', script], { cwd: work, stdout: 'pipe', stderr: 'pipe' });
    const [stdout, , exitCode] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
    expect(exitCode).toBe(0);
    expect(stdout).toContain('3 files: 2 uploaded, 0 skipped (already in the knowledge base), 1 not readable by the server, 0 failed to upload');
    expect(stdout).toContain('indexed: 2 ready, 0 failed');
    expect(stdout).toMatch(/^1\s+\S+\s+\S+\s+\S+\s+docs\/refunds\.md\s+.*«Refunds»/m);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}, 120_000);

test('every environment variable src/config.ts reads is in the README', () => {
  const config = readFileSync(join(ROOT, 'src/config.ts'), 'utf8');
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const read = new Set([...config.matchAll(/(?:int|num|existingFile)\(env, '([A-Z][A-Z0-9_]*)'|\benv\.([A-Z][A-Z0-9_]*)/g)].map((m) => m[1] ?? m[2]!));
  // The pattern sees the reads (it would pass vacuously otherwise).
  expect(read.has('MAX_QUERY_CHARS') && read.has('MAX_SEARCH_LIMIT') && read.has('CLUSTER_NATS_URLS')).toBe(true);
  expect([...read].filter((name) => !readme.includes(`\`${name}\``))).toEqual([]);
});
