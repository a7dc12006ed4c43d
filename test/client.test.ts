// The typed client as a package of its own (scripts/build-client.ts → kb-search-client): built,
// added to a project outside the checkout (copied into its node_modules as `bun add` would, beside
// the packages it depends on), where the README's example type-checks with a plain tsconfig (no Bun
// types, none of our sources: the package holds only JavaScript and declarations), a wrong type
// name is a compile error, and the example runs against a real server.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { KEY, ORG, InProcessServer } from './helpers/server';

const ROOT = resolve(import.meta.dir, '..');
const TSC = join(ROOT, 'node_modules', '.bin', 'tsc');
let server: InProcessServer;
const work = mkdtempSync(join(tmpdir(), 'kb-client-'));
const pkg = join(work, 'package');
const project = join(work, 'project');

/** The TypeScript block that follows the `client-example` marker in the README. */
function readmeExample(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const match = /<!-- client-example[^>]*-->\n```ts\n([\s\S]*?)```/.exec(readme);
  if (!match) throw new Error('README has no client-example block');
  return match[1]!;
}

const tsc = () => Bun.spawnSync([TSC, '--noEmit', '-p', project], { cwd: project });

beforeAll(async () => {
  const build = Bun.spawnSync(['bun', join(ROOT, 'scripts', 'build-client.ts'), '--outdir', pkg], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' });
  if (build.exitCode !== 0) throw new Error(`build:client failed:\n${build.stdout}${build.stderr}`);
  mkdirSync(join(project, 'node_modules', '@types'), { recursive: true });
  cpSync(pkg, join(project, 'node_modules', 'kb-search-client'), { recursive: true });
  // What the package depends on (and their own dependencies), as an install would bring them.
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (name === '@types' || name === 'bun-types' || name === '.bin' || name === '.cache') continue;
    symlinkSync(join(ROOT, 'node_modules', name), join(project, 'node_modules', name));
  }
  symlinkSync(join(ROOT, 'node_modules', '@types', 'node'), join(project, 'node_modules', '@types', 'node'));
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'my-app', type: 'module', private: true }));
  // A tsconfig as `tsc --init` and Node projects have it: strict, Node's types, libraries' own declarations not re-checked.
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'bundler',
        lib: ['ES2022', 'DOM'],
        types: ['node'],
        strict: true,
        skipLibCheck: true,
      },
      include: ['example.ts'],
    }),
  );
  writeFileSync(join(project, 'example.ts'), readmeExample());
  server = await InProcessServer.start();
}, 120_000);

afterAll(async () => {
  await server?.stop();
  server?.cleanup();
  rmSync(work, { recursive: true, force: true });
});

test('the package holds JavaScript and declarations only, and depends on Eden and Elysia alone', () => {
  const files = readdirSync(join(pkg, 'dist')).sort();
  expect(files).toEqual(['app.d.ts', 'index.d.ts', 'index.js', 'metadata-filter.d.ts']);
  const manifest = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'));
  expect(manifest.name).toBe('kb-search-client');
  expect(Object.keys(manifest.dependencies).sort()).toEqual(['@elysiajs/eden', '@sinclair/typebox', 'elysia']);
  // The route types are spelled out: nothing refers back to the server or the engine, but for the
  // metadata filter's type (recursive, so named), whose declarations import nothing.
  const app = readFileSync(join(pkg, 'dist', 'app.d.ts'), 'utf8');
  expect(app).toContain("import type { SearchMetadataFilter } from './metadata-filter';");
  expect(app.replace("from './metadata-filter'", '')).not.toMatch(/import\("\.|from '\.\.?\//);
  expect(readFileSync(join(pkg, 'dist', 'metadata-filter.d.ts'), 'utf8')).not.toMatch(/\bimport\b/);
});

test('the README example type-checks in a project outside the checkout', () => {
  const run = tsc();
  expect(run.stdout.toString() + run.stderr.toString()).toBe('');
  expect(run.exitCode).toBe(0);
}, 120_000);

test('a wrong type name in a request is a compile error', () => {
  writeFileSync(join(project, 'example.ts'), readmeExample().replace("type: 'TEXT_HIGH_QUALITY'", "type: 'TEXT_BEST'"));
  try {
    const run = tsc();
    expect(run.exitCode).not.toBe(0);
    expect(run.stdout.toString()).toContain('\'"TEXT_BEST"\' is not assignable');
  } finally {
    writeFileSync(join(project, 'example.ts'), readmeExample());
  }
}, 120_000);

test('metadataFilter is typed: operator objects, $and / $or; an unknown operator or a wrong operand is a compile error', () => {
  const example = readmeExample();
  expect(example).toContain("metadataFilter: { team: { $in: ['billing', 'support'] } }");
  const extra = `
import type { SearchMetadataFilter } from 'kb-search-client';
const good: SearchMetadataFilter = { year: { $gte: 2020, $lt: 2025 }, tags: ['faq', 'howto'], $or: [{ team: 'billing' }, { draft: { $exists: false } }] };
const bad1: SearchMetadataFilter = { year: { $after: 2020 } };
const bad2: SearchMetadataFilter = { year: { $gte: true } };
const bad3: SearchMetadataFilter = { $or: { team: 'billing' } };
console.log(good, bad1, bad2, bad3);
`;
  writeFileSync(join(project, 'example.ts'), example.replace('$in:', '$within:') + extra);
  try {
    const out = tsc().stdout.toString();
    const errors = out.split('\n').filter((l) => l.includes('error TS'));
    expect(errors).toHaveLength(4);
    expect(out).toContain("'$within' does not exist");
    expect(out).toContain("'$after' does not exist");
    expect(errors.filter((l) => l.includes('example.ts(')).length).toBe(4);
  } finally {
    writeFileSync(join(project, 'example.ts'), example);
  }
}, 120_000);

test('the README example runs against a real server', async () => {
  // Asynchronously: the server runs in this process, and a blocking spawn would stop it answering.
  const run = Bun.spawn(['bun', join(project, 'example.ts')], {
    cwd: project,
    env: { ...process.env, KB_URL: server.url, KB_ORG: ORG, KB_KEY: KEY },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
  expect(stderr).toBe('');
  expect(exitCode).toBe(0);
  expect(stdout).toMatch(/^\d\.\d{3} Refunds are issued within 14 days\.\n$/);
}, 60_000);
