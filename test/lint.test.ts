// The formatter and linter (Biome, biome.jsonc) over the whole repository, as part of the suite:
// a change that is not formatted, or that a lint rule refuses, fails here with Biome's own report.
// `bun run format` fixes what it can.
import { expect, test } from 'bun:test';
import { join } from 'node:path';

const ROOT = join(import.meta.dir, '..');

test('biome ci: formatted and lint-clean', () => {
  const run = Bun.spawnSync([join(ROOT, 'node_modules/.bin/biome'), 'ci', '--colors=off', '--max-diagnostics=50', '.'], {
    cwd: ROOT,
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const report = `${run.stdout.toString()}\n${run.stderr.toString()}`;
  expect(report).toContain('Checked');
  expect(run.exitCode, report.slice(-6000)).toBe(0);
}, 60_000);
