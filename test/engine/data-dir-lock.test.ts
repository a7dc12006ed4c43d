// One engine per data directory (engine/files/data-dir-lock.ts): a second server on the same
// DATA_DIR is refused with a clear message while the first lives, a lock left by a dead process is
// taken over, and the lock is given back on close.
import { afterAll, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockDataDir } from '../../engine/files/data-dir-lock';
import { addContent, createKb, KEY, ORG, TestServer } from '../helpers/server';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'kb-lock-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('a live process holding the lock refuses the directory; once it is gone, the lock is taken over; close gives it back', async () => {
  const dir = tempDir();
  // A live process of this host that is not this one.
  const other = Bun.spawn(['sleep', '60']);
  try {
    writeFileSync(join(dir, 'LOCK'), JSON.stringify({ pid: other.pid, host: (await import('node:os')).hostname(), since: 'earlier' }));
    expect(() => lockDataDir(dir)).toThrow(`is in use by process ${other.pid}`);
  } finally {
    other.kill('SIGKILL');
    await other.exited;
  }
  const release = lockDataDir(dir);
  expect(JSON.parse(readFileSync(join(dir, 'LOCK'), 'utf8')).pid).toBe(process.pid);
  release();
  expect(existsSync(join(dir, 'LOCK'))).toBe(false);
});

test('a lock written on another host is taken over with a warning (a volume moved to a new machine)', () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'LOCK'), JSON.stringify({ pid: 1, host: 'another-host', since: 'earlier' }));
  const warnings: string[] = [];
  const release = lockDataDir(dir, (level, message) => warnings.push(`${level} ${message}`));
  expect(warnings).toEqual(['warn taking over a data directory lock written on another host']);
  release();
});

test('a second server on the same DATA_DIR exits with the reason; after kill -9 of the first, a new server starts on it', async () => {
  const first = await TestServer.start();
  const kb = await createKb(first, 'Locked');
  await addContent(first, kb, 'Written before the second server tried the directory.');
  const second = Bun.spawn(['bun', join(import.meta.dir, '../../src/main.ts')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: first.dataDir, KB_API_KEYS: `${ORG}:${KEY}`, LOG_FORMAT: 'json' },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const code = await second.exited;
  const said = (await new Response(second.stdout).text()) + (await new Response(second.stderr).text());
  expect(code).not.toBe(0);
  expect(said).toContain(`is in use by process ${first.proc.pid}`);
  // The first server was not disturbed.
  expect((await first.api('GET', `/api/v1/knowledge-bases/${kb}`)).status).toBe(200);
  await first.kill9();
  const third = await TestServer.start({ dataDir: first.dataDir });
  try {
    const hits = await third.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query: 'second server' });
    expect(hits.body.data.length).toBe(1);
  } finally {
    await third.stop();
    third.cleanup();
  }
}, 120_000);
