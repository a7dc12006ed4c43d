// The typed client (src/client.ts, `kb-search/client`): the README's example is type-checked with
// tsc against the server's route types, then run against a real server.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { KEY, ORG, InProcessServer } from './helpers/server';

const ROOT = resolve(import.meta.dir, '..');
let server: InProcessServer;
// Inside the checkout, so `kb-search/client` resolves to this package (package.json "exports").
const dir = mkdtempSync(join(ROOT, '.client-example-'));

/** The TypeScript block that follows the `client-example` marker in the README. */
function readmeExample(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const match = /<!-- client-example[^>]*-->\n```ts\n([\s\S]*?)```/.exec(readme);
  if (!match) throw new Error('README has no client-example block');
  return match[1]!;
}

beforeAll(async () => {
  server = await InProcessServer.start();
  writeFileSync(join(dir, 'example.ts'), readmeExample());
  // The project's compiler settings and its ambient declarations, for the example alone.
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ extends: '../tsconfig.json', include: ['example.ts', '../engine/vendor.d.ts', '../src/assets.d.ts'] }),
  );
});
afterAll(async () => {
  await server.stop();
  server.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

test('the README example type-checks against the route types', () => {
  const tsc = Bun.spawnSync([join(ROOT, 'node_modules', '.bin', 'tsc'), '--noEmit', '-p', dir], { cwd: ROOT });
  expect(tsc.stdout.toString() + tsc.stderr.toString()).toBe('');
  expect(tsc.exitCode).toBe(0);
}, 120_000);

test('a wrong type name in a request is a compile error', () => {
  writeFileSync(join(dir, 'example.ts'), readmeExample().replace("type: 'TEXT_HIGH_QUALITY'", "type: 'TEXT_BEST'"));
  try {
    const tsc = Bun.spawnSync([join(ROOT, 'node_modules', '.bin', 'tsc'), '--noEmit', '-p', dir], { cwd: ROOT });
    expect(tsc.exitCode).not.toBe(0);
    expect(tsc.stdout.toString()).toContain('\'"TEXT_BEST"\' is not assignable');
  } finally {
    writeFileSync(join(dir, 'example.ts'), readmeExample());
  }
}, 120_000);

test('the README example runs against a real server', async () => {
  // Asynchronously: the server runs in this process, and a blocking spawn would stop it answering.
  const run = Bun.spawn(['bun', join(dir, 'example.ts')], {
    cwd: ROOT,
    env: { ...process.env, KB_URL: server.url, KB_ORG: ORG, KB_KEY: KEY },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
  expect(stderr).toBe('');
  expect(exitCode).toBe(0);
  expect(stdout).toMatch(/^\d\.\d{3} Refunds are issued within 14 days\.\n$/);
}, 60_000);
