// The worker registry (engine/workers/entry-points.ts) is the one place that knows where worker
// scripts are: scripts/build.ts makes each an entry point of the binary, the pools start them.
import { expect, test } from 'bun:test';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { WORKER_ENTRY_POINTS, workerUrl } from '../../engine/workers/entry-points';

const ROOT = resolve(import.meta.dir, '../..');

test('every registered worker exists and resolves to its source file', () => {
  for (const [kind, path] of Object.entries(WORKER_ENTRY_POINTS)) {
    expect(existsSync(join(ROOT, path))).toBe(true);
    expect(workerUrl(kind as keyof typeof WORKER_ENTRY_POINTS).pathname).toBe(join(ROOT, path));
  }
});

test('no source file outside the registry names a worker script of its own', () => {
  const offenders: string[] = [];
  for (const dir of ['engine', 'src', 'snapshots', 'scripts']) {
    for (const name of readdirSync(join(ROOT, dir), { recursive: true }) as string[]) {
      if (!name.endsWith('.ts') || name.endsWith('entry-points.ts')) continue;
      const text = readFileSync(join(ROOT, dir, name), 'utf8');
      if (/['"`][^'"`]*worker\.ts['"`]/.test(text)) offenders.push(join(dir, name));
    }
  }
  expect(offenders).toEqual([]);
});
