// Tests and benchmarks are separate: neither imports the other. What both need (the server
// launcher, NATS and S3 servers, the PRNG, knowledge-base configurations, the SciFact loader)
// lives in support/, which imports neither.
import { expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dir, '..');

/** Every relative module specifier of every .ts file under `dir` (static, side-effect, dynamic, re-export), resolved against the project root. */
function importsOf(dir: string): { file: string; target: string }[] {
  const out: { file: string; target: string }[] = [];
  const specifier = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)['"`](\.{1,2}\/[^'"`]*)['"`]/g;
  for (const name of readdirSync(join(ROOT, dir), { recursive: true }) as string[]) {
    if (!name.endsWith('.ts')) continue;
    const file = join(ROOT, dir, name);
    for (const m of readFileSync(file, 'utf8').matchAll(specifier)) {
      out.push({ file: relative(ROOT, file), target: relative(ROOT, resolve(dirname(file), m[1]!)) });
    }
  }
  return out;
}

const under = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`);
const listed = (found: { file: string; target: string }[]) => found.map(({ file, target }) => `${file} → ${target}`);

test('no test imports a benchmark module', () => {
  const imports = importsOf('test');
  expect(listed(imports.filter(({ target }) => under(target, 'bench')))).toEqual([]);
  // The check sees the imports (it would pass vacuously on a broken pattern otherwise).
  expect(imports.some(({ target }) => target === 'support/retrieval-eval')).toBe(true);
});

test('no benchmark imports a test module', () => {
  const imports = importsOf('bench');
  expect(listed(imports.filter(({ target }) => under(target, 'test')))).toEqual([]);
  expect(imports.some(({ target }) => target === 'support/server')).toBe(true);
});

test('support/ imports neither tests nor benchmarks', () => {
  expect(listed(importsOf('support').filter(({ target }) => under(target, 'test') || under(target, 'bench')))).toEqual([]);
});
