// The entry point (src/main.ts, the binary's too): --help lists every command (server, admin,
// models, client), and a word that is no command is a usage error, never a second server.
import { expect, test } from 'bun:test';
import { join } from 'node:path';
import { TestServer } from './helpers/server';

const MAIN = join(import.meta.dir, '..', 'src', 'main.ts');
const run = (...args: string[]) =>
  Bun.spawnSync(['bun', MAIN, ...args], { env: { ...process.env, PORT: '0', DATA_DIR: TestServer.tempDir() }, timeout: 30_000 });

test('--help, -h and help list the server, admin, models and the client commands', () => {
  for (const flag of ['--help', '-h', 'help']) {
    const out = run(flag);
    expect(out.exitCode).toBe(0);
    const text = out.stdout.toString();
    for (const line of ['serve the API', 'bun run admin org create', 'bun run models pull', 'bun run cli ingest', 'bun run cli import', 'bun run cli search'])
      expect(text).toContain(line);
  }
});

test('an unknown command exits 2 naming it, without starting a server', () => {
  const out = run('frobnicate');
  expect(out.exitCode).toBe(2);
  expect(out.stderr.toString()).toStartWith("error: unknown command 'frobnicate'");
  expect(out.stdout.toString()).not.toContain('listening');
});
