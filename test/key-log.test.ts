// The key store on the record log (src/auth/key-records.ts): a key file written by earlier versions
// (one file of frames, DATA_DIR/auth/keys.log) is adopted unchanged and its keys keep working, through
// the admin command and a real server over HTTP; the server follows what the admin command appends.
import { afterEach, expect, test } from 'bun:test';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { encodeFrame, MemoryLog, SegmentLog } from '../engine';
import { hashKey, type KeyRecord } from '../src/auth/key-store';
import { encodeKeyRecord, keyLogDir, keyRecordsOf, legacyKeyFile, openKeyRecords, pollKeyLog } from '../src/auth/key-records';
import { TestServer } from './helpers/server';

const dirs: string[] = [];
const tempDir = () => {
  const d = TestServer.tempDir();
  dirs.push(d);
  return d;
};
const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const OLD_KEY = 'kbk_issued-by-an-earlier-version';
const at = '2025-01-02T03:04:05.000Z';
const oldRecords: KeyRecord[] = [
  { t: 'org.create', id: 'org_legacy', name: 'Legacy', at },
  { t: 'key.issue', keyId: 'key_legacy', orgId: 'org_legacy', hash: hashKey(OLD_KEY).toString('hex'), label: 'old', at },
  { t: 'key.issue', keyId: 'key_gone', orgId: 'org_legacy', hash: hashKey('kbk_revoked-long-ago').toString('hex'), label: 'gone', at },
  { t: 'key.revoke', keyId: 'key_gone', at },
];

/** A key file as earlier versions wrote it: frames numbered from 1, JSON records, one file. */
function writeOldKeyFile(dataDir: string): Buffer {
  mkdirSync(join(dataDir, 'auth'), { recursive: true });
  oldRecords.forEach((r, i) => appendFileSync(legacyKeyFile(dataDir), encodeFrame(i + 1, new TextEncoder().encode(JSON.stringify(r)))));
  return readFileSync(legacyKeyFile(dataDir));
}

test('a key file of an earlier version is adopted unchanged as the first segment; appends continue its numbering', async () => {
  const dataDir = tempDir();
  const before = writeOldKeyFile(dataDir);
  const store = await openKeyRecords({ dataDir, cluster: undefined });
  expect(store.records()).toEqual(oldRecords);
  expect(existsSync(legacyKeyFile(dataDir))).toBe(false);
  expect(readdirSync(keyLogDir(dataDir))).toEqual(['wal-00000000000000000001.log']);
  expect(readFileSync(join(keyLogDir(dataDir), 'wal-00000000000000000001.log')).equals(before)).toBe(true);
  const added: KeyRecord = { t: 'org.create', id: 'org_new', name: 'New', at };
  await store.append([added]);
  await store.close();

  const again = await openKeyRecords({ dataDir, cluster: undefined });
  expect(again.records()).toEqual([...oldRecords, added]);
  await again.close();
  // Still one file, the old frames first, the new one numbered after them.
  const log = await SegmentLog.open({ dir: keyLogDir(dataDir) }, () => {});
  const seqs: number[] = [];
  await log.read(0, (e) => seqs.push(e.seq));
  expect(seqs).toEqual([1, 2, 3, 4, 5]);
  await log.close();
});

test('an old key file found beside a key log that already has segments is left in place and reported, not read', async () => {
  const dataDir = tempDir();
  const first = await openKeyRecords({ dataDir, cluster: undefined });
  await first.append([{ t: 'org.create', id: 'org_a', name: 'A', at }]);
  await first.close();
  writeOldKeyFile(dataDir);
  const warnings: string[] = [];
  const seen: number[] = [];
  const log = await SegmentLog.open({ dir: keyLogDir(dataDir), adopt: legacyKeyFile(dataDir), log: (_level, m) => warnings.push(m) }, (e) => seen.push(e.seq));
  expect(seen).toEqual([1]);
  expect(warnings).toEqual(['write-ahead log: a file of an earlier layout lies beside the log and is not read']);
  expect(existsSync(legacyKeyFile(dataDir))).toBe(true);
  await log.close();
});

test('upgrade: a server started on a data directory with an old key file accepts its keys over HTTP, and follows the admin command after', async () => {
  const dataDir = tempDir();
  writeOldKeyFile(dataDir);
  const server = await TestServer.start({ dataDir });
  servers.push(server);
  const list = (key: string) => server.api('GET', '/api/v1/knowledge-bases', undefined, { org: 'org_legacy', key });
  expect((await list(OLD_KEY)).status).toBe(200);
  expect((await list('kbk_revoked-long-ago')).status).toBe(401);
  expect(existsSync(legacyKeyFile(dataDir))).toBe(false);

  const revoke = Bun.spawnSync(['bun', join(import.meta.dir, '..', 'src/admin.ts'), 'key', 'revoke', 'key_legacy'], {
    env: { ...process.env, DATA_DIR: dataDir },
  });
  expect(revoke.exitCode).toBe(0);
  let status = 0;
  for (let i = 0; i < 100 && status !== 401; i++) {
    status = (await list(OLD_KEY)).status;
    if (status !== 401) await Bun.sleep(50);
  }
  expect(status).toBe(401);
});

test('pollKeyLog hands over what is appended after it starts, once each, in order', async () => {
  const log = new MemoryLog();
  const store = keyRecordsOf(log, []);
  await store.append([oldRecords[0]!]);
  const got: KeyRecord[] = [];
  const polling = pollKeyLog(log, (r) => got.push(r), 10);
  try {
    await Bun.sleep(50);
    expect(got).toEqual([]); // records before it started are the opener's
    await store.append(oldRecords.slice(1));
    for (let i = 0; i < 100 && got.length < 3; i++) await Bun.sleep(10);
    await Bun.sleep(50);
    expect(got).toEqual(oldRecords.slice(1));
  } finally {
    polling.stop();
  }
  // The records themselves: JSON in UTF-8, as the key file always held them.
  const payloads: string[] = [];
  await log.read(0, (e) => payloads.push(new TextDecoder().decode(e.payload)));
  expect(payloads).toEqual(oldRecords.map((r) => JSON.stringify(r)));
  expect(new TextDecoder().decode(encodeKeyRecord(oldRecords[0]!))).toBe(JSON.stringify(oldRecords[0]));
});

test('the server reports key-log warnings in its own log (JSON lines), not on stderr alone', async () => {
  const dataDir = tempDir();
  const first = await openKeyRecords({ dataDir, cluster: undefined });
  await first.append([{ t: 'org.create', id: 'org_a', name: 'A', at }]);
  await first.close();
  writeOldKeyFile(dataDir);
  const server = await TestServer.start({ dataDir });
  servers.push(server);
  expect(await server.waitForOutput('a file of an earlier layout lies beside the log')).toBe(true);
  const line = server.output.find((l) => l.includes('a file of an earlier layout'))!;
  const entry = JSON.parse(line.slice(line.indexOf('{')));
  expect(entry).toMatchObject({ level: 40, log: 'keys', file: legacyKeyFile(dataDir) });
});
