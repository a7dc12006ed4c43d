// Snapshots over real HTTP with a real S3 server (s3rver): round trip, restore on an empty data
// directory, store outage, corrupt snapshot fallback, and kill -9 at random moments under load.
import { afterAll, describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sharesRecords } from '../snapshots/format';
import { freePort, s3Env, startS3, type TestS3 } from './helpers/s3';
import { addContent, createKb, TestServer } from './helpers/server';

const cleanup: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

/** Snapshot quickly: check every 100 ms, due 200 ms after a write. */
const FAST = { SNAPSHOT_CHECK_MS: '100', SNAPSHOT_INTERVAL_MIN: String(0.2 / 60), SNAPSHOT_MAX_BACKOFF_MS: '300' };

async function start(options: { dataDir?: string; env?: Record<string, string> } = {}) {
  const s = await TestServer.start({ dataDir: options.dataDir, env: { ...FAST, ...options.env } });
  cleanup.push(async () => {
    if (s.proc.exitCode === null) await s.kill9();
    s.cleanup();
  });
  return s;
}

async function until<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

const snapshotsWritten = (s: TestServer) => s.output.filter((l) => l.includes('"msg":"snapshot written"')).map((l) => JSON.parse(l));

/** Wait until a snapshot covering every record logged so far is written (and uploaded, if a store is set). */
async function waitForSnapshotCovering(s: TestServer) {
  const ready = await s.api('GET', '/ready');
  const logSeq: number = ready.body.snapshots.logSeq;
  return until('a snapshot covering the log', () => snapshotsWritten(s).find((r) => r.seq >= logSeq));
}

async function allSearches(s: TestServer, kb: string) {
  const out = [];
  for (const query of ['penguin colony', 'desert heat', 'volcano']) {
    for (const mode of ['full-text', 'semantic', 'hybrid']) {
      const r = await s.api('POST', `/api/v1/knowledge-bases/${kb}/search/${mode}`, { query, limit: 5 });
      out.push(r.body.data);
    }
  }
  return out;
}

async function seed(s: TestServer) {
  const kb = await createKb(s, 'Snapshots');
  const texts = [
    'Penguins live in large colonies.',
    'The desert heat is intense at noon.',
    'A volcano erupted near the village.',
    'Penguin chicks huddle for warmth.',
    'Sand dunes shift in the desert wind.',
  ];
  for (const t of texts) await addContent(s, kb, t);
  return kb;
}

describe('local snapshots', () => {
  test('round trip: identical search results after kill -9, restart from snapshot plus log', async () => {
    const a = await start();
    const kb = await seed(a);
    await waitForSnapshotCovering(a);
    const extra = await addContent(a, kb, 'A late penguin note, only in the log.');
    const before = await allSearches(a, kb);
    await a.kill9();
    const b = await start({ dataDir: a.dataDir });
    const ready = (await b.api('GET', '/ready')).body;
    expect(ready.recovery.snapshot.seq).toBeGreaterThan(0);
    expect(await allSearches(b, kb)).toEqual(before);
    expect((await b.api('GET', `/api/v1/knowledge-bases/${kb}/contents/${extra}`)).status).toBe(200);
  }, 60_000);

  test('a graceful stop leaves old snapshots to the next start, which prunes them', async () => {
    const env = { SNAPSHOT_KEEP: '1', SNAPSHOT_INTERVAL_MIN: '60', SNAPSHOT_SHUTDOWN_MIN_LOG_MB: '0' };
    const a = await start({ env });
    const kb = await seed(a);
    await addContent(a, kb, 'A first note before the stop.');
    expect(await a.stop()).toBe(0);
    const snaps = (dir: string) => readdirSync(join(dir, 'snapshots')).filter((n) => n.startsWith('snap-'));
    expect(snaps(a.dataDir).length).toBe(1);
    const b = await start({ dataDir: a.dataDir, env });
    await addContent(b, kb, 'A second note before the second stop.');
    expect(await b.stop()).toBe(0);
    // The shutdown wrote a second snapshot and removed nothing.
    const left = snaps(a.dataDir).sort();
    expect(left.length).toBe(2);
    const c = await start({ dataDir: a.dataDir, env });
    expect((await c.api('GET', '/ready')).body.recovery.snapshot.seq).toBe(Number(left[1]!.slice(5)));
    await until('the older snapshot pruned', () => (snaps(a.dataDir).length === 1 ? true : undefined));
    expect(snaps(a.dataDir)).toEqual([left[1]!]);
    expect((await c.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query: 'second note', limit: 1 })).body.data[0].contentChunk).toContain(
      'second note',
    );
  }, 60_000);

  test('a graceful stop after a few writes leaves them to the log: the next start loads the newest snapshot and replays them', async () => {
    const a = await start({ env: { SNAPSHOT_INTERVAL_MIN: '60' } });
    const kb = await seed(a);
    // Before the first snapshot, a stop snapshots whatever was written.
    expect(await a.stop()).toBe(0);
    const snaps = () => readdirSync(join(a.dataDir, 'snapshots')).filter((n) => n.startsWith('snap-'));
    const [first] = snaps();
    expect(first).toBeDefined();
    const b = await start({ dataDir: a.dataDir, env: { SNAPSHOT_INTERVAL_MIN: '60' } });
    await addContent(b, kb, 'Penguins again, after the snapshot: a note left to the log.');
    const before = await allSearches(b, kb);
    expect(await b.stop()).toBe(0);
    expect(b.output.some((l) => l.includes('no snapshot at shutdown'))).toBe(true);
    expect(snaps()).toEqual([first!]);
    const c = await start({ dataDir: a.dataDir, env: { SNAPSHOT_INTERVAL_MIN: '60' } });
    const { recovery } = (await c.api('GET', '/ready')).body;
    expect(recovery.snapshot).toMatchObject({ seq: Number(first!.slice(5)), from: 'dumps' });
    expect(recovery.records).toBeGreaterThan(0);
    expect(await allSearches(c, kb)).toEqual(before);
  }, 60_000);

  test('a corrupt newest snapshot falls back to the newest sharing none of its files (and the log kept after it); found after a start from its dumps, the server exits first', async () => {
    const a = await start({ env: { SNAPSHOT_KEEP: '2' } });
    const kb = await seed(a);
    await waitForSnapshotCovering(a);
    await addContent(a, kb, 'Penguins again, after the first snapshot.');
    await waitForSnapshotCovering(a);
    const before = await allSearches(a, kb);
    await a.kill9();
    const dirs = readdirSync(join(a.dataDir, 'snapshots'))
      .filter((n) => n.startsWith('snap-'))
      .sort();
    // Two kept, and when the newest continues the one before it (sharing its records), also the
    // newest sharing nothing with it: the one to fall back to.
    const at = (name: string) => join(a.dataDir, 'snapshots', name);
    const sharing = dirs.slice(0, -1).filter((d) => sharesRecords(at(d), at(dirs.at(-1)!)));
    const fallback = dirs.filter((d) => !sharing.includes(d) && d !== dirs.at(-1)).at(-1)!;
    expect(dirs.length).toBe(sharing.length > 0 ? 3 : 2);
    const newest = join(a.dataDir, 'snapshots', dirs.at(-1)!, 'records.log');
    const bytes = readFileSync(newest);
    bytes[Math.floor(bytes.length / 2)]! ^= 0xff;
    writeFileSync(newest, bytes);
    // The state comes from the snapshot's dumps (intact); its records are checked after: damaged,
    // no snapshot can be built on them, so the server exits, the snapshot set aside.
    const b = await TestServer.start({ dataDir: a.dataDir, env: FAST, waitReady: false });
    cleanup.push(async () => {
      if (b.proc.exitCode === null) await b.kill9();
    });
    expect(await b.proc.exited).toBe(1);
    expect(b.output.some((l) => l.includes('snapshot records damaged') && l.includes('fails its checksum'))).toBe(true);
    // Set aside with every snapshot holding the damaged file.
    for (const d of [dirs.at(-1)!, ...sharing]) expect(readdirSync(join(a.dataDir, 'snapshots')).filter((n) => n.startsWith(`damaged-${d}-`))).toHaveLength(1);
    const c = await start({ dataDir: a.dataDir });
    expect((await c.api('GET', '/ready')).body.recovery.snapshot.seq).toBe(Number(fallback.slice(5)));
    expect(await allSearches(c, kb)).toEqual(before);
  }, 60_000);
});

describe('index dumps', () => {
  test('a graceful restart loads the index dumps: identical answers in every mode; a damaged dump falls back to the records', async () => {
    // Every stop snapshots here (a stop after a few writes may leave them to the log).
    const a = await start({ env: { SNAPSHOT_SHUTDOWN_MIN_LOG_MB: '0' } });
    const kb = await seed(a);
    await addContent(a, kb, 'Penguins and volcanoes share a note, with desert heat. '.repeat(40));
    const before = await allSearches(a, kb);
    expect(await a.stop()).toBe(0);
    const [newest] = readdirSync(join(a.dataDir, 'snapshots'))
      .filter((n) => n.startsWith('snap-'))
      .sort()
      .reverse();
    const dir = join(a.dataDir, 'snapshots', newest!);
    const dumps = readdirSync(dir).filter((n) => n.startsWith('index-') && n.endsWith('.dump'));
    expect(dumps.length).toBe(1);
    // The items beside it, and the text store's file they point into.
    expect(readdirSync(dir).filter((n) => n.startsWith('items-') && n.endsWith('.dump')).length).toBe(1);
    expect(readdirSync(dir)).toContain('texts.bin');
    // The vector file beside it: the server's own, linked.
    expect(readdirSync(dir).filter((n) => n.endsWith('.rows')).length).toBe(1);

    const b = await start({ dataDir: a.dataDir });
    expect(await allSearches(b, kb)).toEqual(before);
    expect(b.output.some((l) => l.includes('index dump unusable') || l.includes('vector file unusable'))).toBe(false);
    await b.kill9();

    const path = join(dir, dumps[0]!);
    const bytes = readFileSync(path);
    bytes[Math.floor(bytes.length / 2)]! ^= 0xff;
    writeFileSync(path, bytes);
    const c = await start({ dataDir: a.dataDir });
    expect(await c.waitForOutput('index dump unusable')).toBe(true);
    expect((await c.api('GET', '/ready')).body.recovery.snapshot.seq).toBe(Number(newest!.slice(5)));
    expect(await allSearches(c, kb)).toEqual(before);
  }, 60_000);
});

describe('S3 snapshot store (s3rver)', () => {
  let s3: TestS3;

  test('snapshots go to the bucket; a new machine with an empty data directory restores from it', async () => {
    s3 = await startS3();
    cleanup.push(() => s3.stop());
    const a = await start({ env: s3Env(s3.port) });
    const kb = await seed(a);
    await waitForSnapshotCovering(a);
    const before = await allSearches(a, kb);
    await a.kill9();
    // A fresh data directory: only the bucket knows the data.
    const b = await start({ env: s3Env(s3.port) });
    expect(await b.waitForOutput('restored snapshot from the store')).toBe(true);
    expect(await allSearches(b, kb)).toEqual(before);
    expect(b.output.some((l) => l.includes('vector file unusable'))).toBe(false);
    expect((await b.api('GET', `/api/v1/knowledge-bases/${kb}`)).body.data.name).toBe('Snapshots');
  }, 60_000);

  test('store down during snapshots: service goes on, the log is kept, retries succeed once it is back', async () => {
    const port = await freePort();
    const a = await start({ env: s3Env(port) });
    const kb = await seed(a);
    await until('a failed snapshot', () => (a.output.some((l) => l.includes('snapshot failed')) ? true : undefined));
    const ready = await a.api('GET', '/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.snapshots.consecutiveFailures).toBeGreaterThan(0);
    expect(ready.body.snapshots.lastError).toBeTruthy();
    const metrics = await (await fetch(`${a.url}/metrics`)).text();
    expect(metrics).toMatch(/kb_snapshot_failures_total [1-9]/);
    // Writes keep working and nothing is truncated while the store is down.
    const late = await addContent(a, kb, 'Written while the store was down: penguins.');
    const walBefore = readdirSync(join(a.dataDir, 'wal')).filter((n) => n.endsWith('.log'));
    expect(walBefore.length).toBeGreaterThan(0);
    expect(walBefore[0]).toBe('wal-00000000000000000001.log');

    const back = await startS3(port);
    cleanup.push(() => back.stop());
    await until('a snapshot after the store came back', () => (a.output.some((l) => l.includes('"msg":"snapshot written"')) ? true : undefined));
    const before = await allSearches(a, kb);
    await a.kill9();
    const b = await start({ env: s3Env(port) });
    expect(await b.waitForOutput('restored snapshot from the store')).toBe(true);
    expect((await b.api('GET', `/api/v1/knowledge-bases/${kb}/contents/${late}`)).status).toBe(200);
    expect(await allSearches(b, kb)).toEqual(before);
  }, 90_000);
});

describe('kill -9 at random moments under concurrent writes', () => {
  test('every acknowledged write is present after each restart (many rounds, different timings)', async () => {
    const dataDir = TestServer.tempDir();
    cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const acked: string[] = [];
    let kb = '';
    let seed = 12345;
    const rand = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    const rounds = 8;
    let roundsWithSnapshots = 0;
    for (let round = 0; round < rounds; round++) {
      const s = await start({ dataDir, env: { SNAPSHOT_CHECK_MS: '50', SNAPSHOT_INTERVAL_MIN: String(0.05 / 60), INGEST_WORKERS: '1' } });
      if (!kb) kb = await createKb(s, 'Crash test');
      // Everything acknowledged in earlier rounds is still there.
      const list = [];
      for (let page = 1; ; page++) {
        const r = await s.api('GET', `/api/v1/knowledge-bases/${kb}/contents?limit=100&page=${page}`);
        expect(r.status).toBe(200);
        list.push(...r.body.data.map((c: { id: string }) => c.id));
        if (r.body.data.length < 100) break;
      }
      const present = new Set(list);
      const missing = acked.filter((id) => !present.has(id));
      expect(missing).toEqual([]);
      // New load, killed after a random delay (0–800 ms), sometimes during a snapshot.
      let stop = false;
      const writer = async (w: number) => {
        for (let i = 0; !stop; i++) {
          try {
            const r = await s.api('POST', `/api/v1/knowledge-bases/${kb}/contents`, { text: `round ${round} writer ${w} item ${i} about penguins` });
            if (r.status === 201) acked.push(r.body.data.id);
          } catch {
            return;
          }
        }
      };
      const writers = Array.from({ length: 6 }, (_, w) => writer(w));
      await Bun.sleep(Math.floor(rand() * 800));
      if (snapshotsWritten(s).length > 0) roundsWithSnapshots++;
      await s.kill9();
      stop = true;
      await Promise.all(writers);
    }
    const final = await start({ dataDir });
    const total = (await final.api('GET', `/api/v1/knowledge-bases/${kb}/contents?limit=1`)).body.total;
    expect(total).toBeGreaterThanOrEqual(acked.length);
    expect(acked.length).toBeGreaterThan(50);
    // Kills landed while snapshots were being taken and the log truncated, not only between them.
    expect(roundsWithSnapshots).toBeGreaterThan(0);
    expect((await final.api('GET', '/ready')).body.recovery.snapshot).toBeDefined();
  }, 180_000);
});
