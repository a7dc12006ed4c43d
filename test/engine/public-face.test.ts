// The layering: the engine is a library with one public face (engine/index.ts). The server (src/)
// and snapshots (snapshots/) import only that face; the engine imports neither of them.
import { expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dir, '../..');

/** Every relative import of every .ts file under `dir`, resolved against the project root. */
function importsOf(dir: string): { file: string; target: string }[] {
  const out: { file: string; target: string }[] = [];
  for (const name of readdirSync(join(ROOT, dir), { recursive: true }) as string[]) {
    if (!name.endsWith('.ts')) continue;
    const file = join(ROOT, dir, name);
    for (const m of readFileSync(file, 'utf8').matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+['"](\.[^'"]+)['"]/g)) {
      out.push({ file: relative(ROOT, file), target: relative(ROOT, resolve(dirname(file), m[1]!)) });
    }
  }
  return out;
}

test('src/ and snapshots/ import the engine only through engine/index.ts', () => {
  const reaching = [...importsOf('src'), ...importsOf('snapshots')].filter(
    ({ target }) => target.startsWith('engine/') || (target.startsWith('engine') && target !== 'engine' && target !== 'engine/index'),
  );
  expect(reaching.map(({ file, target }) => `${file} → ${target}`)).toEqual([]);
  // The check sees imports at all (it would pass vacuously on a broken pattern otherwise).
  expect(importsOf('src').some(({ target }) => target === 'engine')).toBe(true);
});

test('the engine imports neither the server nor snapshots', () => {
  const outward = importsOf('engine').filter(({ target }) => target.startsWith('src') || target.startsWith('snapshots'));
  expect(outward.map(({ file, target }) => `${file} → ${target}`)).toEqual([]);
});

test('the server reaches snapshots only through snapshots/index.ts', () => {
  const reaching = importsOf('src').filter(({ target }) => target.startsWith('snapshots/') && target !== 'snapshots/index');
  expect(reaching.map(({ file, target }) => `${file} → ${target}`)).toEqual([]);
});
