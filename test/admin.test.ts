// The admin command against a running server sharing its data directory.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InProcessServer } from './helpers/server';

let server: InProcessServer;
beforeAll(async () => {
  server = await InProcessServer.start();
});
afterAll(async () => {
  await server.stop();
  server.cleanup();
});

function admin(...args: string[]) {
  const res = Bun.spawnSync(['bun', join(import.meta.dir, '..', 'src/admin.ts'), ...args, '--json'], {
    env: { ...process.env, DATA_DIR: server.dataDir },
  });
  return { code: res.exitCode, out: res.stdout.toString(), err: res.stderr.toString() };
}

async function pollStatus(org: string, key: string, want: number) {
  for (let i = 0; i < 100; i++) {
    const res = await server.api('GET', '/api/v1/knowledge-bases', undefined, { org, key });
    if (res.status === want) return res.status;
    await Bun.sleep(50);
  }
  return -1;
}

test('create an organization, issue a key, use it, revoke it', async () => {
  const org = JSON.parse(admin('org', 'create', '--name', 'Acme').out);
  expect(org.id).toMatch(/^org_/);
  const issued = JSON.parse(admin('key', 'issue', '--org', org.id, '--label', 'ci').out);
  expect(issued.key).toMatch(/^kbk_/);

  // Only the hash is stored.
  const keyLog = join(server.dataDir, 'auth', 'keys');
  const stored = readdirSync(keyLog)
    .map((name) => readFileSync(join(keyLog, name), 'latin1'))
    .join('');
  expect(stored).toContain(issued.keyId);
  expect(stored).not.toContain(issued.key);

  expect(await pollStatus(org.id, issued.key, 200)).toBe(200);
  const created = await server.api('POST', '/api/v1/knowledge-bases', { name: 'Acme KB', type: 'TEXT_COST_EFFECTIVE' }, { org: org.id, key: issued.key });
  expect(created.status).toBe(201);
  // The key is bound to its organization.
  expect((await server.api('GET', '/api/v1/knowledge-bases', undefined, { org: 'org_test', key: issued.key })).status).toBe(401);

  const listed = JSON.parse(admin('key', 'list', '--org', org.id).out);
  expect(listed).toEqual([expect.objectContaining({ keyId: issued.keyId, orgId: org.id, label: 'ci' })]);
  expect(JSON.stringify(listed)).not.toContain(issued.key);

  expect(admin('key', 'revoke', issued.keyId).code).toBe(0);
  expect(await pollStatus(org.id, issued.key, 401)).toBe(401);
  expect(admin('key', 'revoke', issued.keyId).code).toBe(2);
});

test('bad admin commands fail with a usage message', () => {
  const r = admin('key', 'issue', '--org', 'org_missing');
  expect(r.code).toBe(2);
  expect(r.err).toContain('no organization');
  expect(admin('frobnicate').code).toBe(2);
  expect(admin('org', 'create').code).toBe(2);
});

test('--help prints the usage (exit 0); an unknown option gets the usage and exit 2, never a stack trace', () => {
  for (const flag of ['--help', '-h']) {
    const help = admin(flag);
    expect(help.code).toBe(0);
    expect(help.out).toContain('bun run admin org create --name <name>');
  }
  const bogus = admin('org', 'list', '--bogus');
  expect(bogus.code).toBe(2);
  expect(bogus.err).toContain("Unknown option '--bogus'");
  expect(bogus.err).toContain('usage:');
  expect(bogus.err).not.toContain('    at ');
});
