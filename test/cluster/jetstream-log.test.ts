// The record log on NATS JetStream (engine/log/jetstream-log.ts) against a real cluster of three
// nats-server processes (test/helpers/nats.ts), replicas 3: appends are numbered in one order and
// read back from any connection; a publish retried with the same message id is stored once; with
// one server killed (SIGKILL) appends go on through the quorum of two and nothing acknowledged is
// lost, and the killed server rejoins; a range is read by its own connection (as the snapshot
// worker does); records below a sequence are purged.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { LogEntry } from '../../engine/log/log';
import { JetStreamLog, readStream } from '../../engine/log/jetstream-log';
import { readLogRange } from '../../engine/log/range';
import { NATS_SERVER, NatsCluster } from '../helpers/nats';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
let cluster: NatsCluster;

beforeAll(async () => {
  // Installed by the README's test command (scripts/test-deps.ts): fail, never skip, without it.
  if (!existsSync(NATS_SERVER)) throw new Error(`${NATS_SERVER} is missing: run "bun scripts/test-deps.ts"`);
  cluster = await NatsCluster.start(3);
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

async function openLog(stream: string, replay: LogEntry[] = [], afterSeq = 0) {
  return JetStreamLog.open({ servers: cluster.urls, stream, replicas: 3 }, (e) => replay.push(e), afterSeq);
}

describe('JetStream log on a three-server cluster', () => {
  test('appends are numbered in order and replayed from another connection', async () => {
    const log = await openLog('KB_ORDER');
    const seqs = [];
    for (let i = 1; i <= 20; i++) seqs.push(await log.append(enc(`r${i}`)));
    expect(seqs).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(log.lastSequence).toBe(20);
    const concurrent = await Promise.all(Array.from({ length: 10 }, (_, i) => log.append(enc(`c${i}`))));
    expect([...concurrent].sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => 21 + i));

    const replayed: LogEntry[] = [];
    const other = await openLog('KB_ORDER', replayed);
    expect(replayed.map((e) => e.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(dec(replayed[0]!.payload)).toBe('r1');
    const after: number[] = [];
    await other.read(25, (e) => after.push(e.seq));
    expect(after).toEqual([26, 27, 28, 29, 30]);
    // Waiting for a position: at once when reached, false after the timeout when not, and a
    // position reached meanwhile resolves the wait.
    expect(await other.waitFollowed(30, 1000)).toBe(true);
    expect(await other.waitFollowed(1_000_000, 100)).toBe(false);
    const waiting = other.waitFollowed(31, 10_000);
    await log.append(enc('r31'));
    expect(await waiting).toBe(true);
    await Promise.all([log.close(), other.close()]);
  }, 60_000);

  test('a publish retried with the same message id is stored once', async () => {
    const log = await openLog('KB_DEDUP');
    await log.append(enc('first'));
    const nc = await cluster.connect();
    const js = jetstream(nc);
    const a = await js.publish('KB_DEDUP.records', enc('retried'), { msgID: 'same-id' });
    const b = await js.publish('KB_DEDUP.records', enc('retried'), { msgID: 'same-id' });
    expect(b.duplicate).toBe(true);
    expect(b.seq).toBe(a.seq);
    const all: string[] = [];
    await log.read(0, (e) => all.push(dec(e.payload)));
    expect(all).toEqual(['first', 'retried']);
    await nc.close();
    await log.close();
  }, 60_000);

  test('a killed server: appends continue through the quorum, nothing acknowledged is lost, it rejoins', async () => {
    const log = await openLog('KB_KILL');
    const acknowledged = new Map<number, string>();
    for (let i = 0; i < 10; i++) acknowledged.set(await log.append(enc(`before-${i}`)), `before-${i}`);
    await cluster.kill(0);
    for (let i = 0; i < 20; i++) acknowledged.set(await log.append(enc(`during-${i}`)), `during-${i}`);
    cluster.restart(0);
    await cluster.waitForJetStream();
    for (let i = 0; i < 5; i++) acknowledged.set(await log.append(enc(`after-${i}`)), `after-${i}`);

    // Every acknowledged record, each once and in order, read through the restarted server alone.
    const only = await connect({ servers: cluster.urls[0]! });
    const seen: LogEntry[] = [];
    const deadline = Date.now() + 30_000;
    for (;;) {
      seen.length = 0;
      try {
        await readStream(only, 'KB_KILL', 0, 35, (e) => seen.push(e), 3000);
      } catch {}
      if (seen.length === 35 || Date.now() > deadline) break;
      await Bun.sleep(250); // the restarted replica catches up
    }
    expect(seen.map((e) => [e.seq, dec(e.payload)])).toEqual([...acknowledged].sort((a, b) => a[0] - b[0]));
    // The restarted server holds a current replica of the stream again.
    const jsm = await jetstreamManager(only);
    let replicas: { name: string; current: boolean }[] = [];
    for (const until = Date.now() + 30_000; Date.now() < until; await Bun.sleep(250)) {
      const info = await jsm.streams.info('KB_KILL');
      replicas = [
        { name: info.cluster!.leader!, current: true },
        ...(info.cluster!.replicas ?? []).map((r) => ({ name: r.name, current: r.current && !r.offline })),
      ];
      if (replicas.length === 3 && replicas.every((r) => r.current)) break;
    }
    expect(replicas.map((r) => r.name).sort()).toEqual(['n1', 'n2', 'n3']);
    expect(replicas.every((r) => r.current)).toBe(true);
    await only.close();
    await log.close();
  }, 120_000);

  test('a range is read by its own connection; records below a sequence are purged', async () => {
    const log = await openLog('KB_RANGE');
    for (let i = 1; i <= 12; i++) await log.append(enc(`x${i}`));
    const through = await log.roll();
    expect(through).toBe(12);
    const ranged: number[] = [];
    await readLogRange(log.range(4, 9), (e) => ranged.push(e.seq));
    expect(ranged).toEqual([5, 6, 7, 8, 9]);
    expect(await log.sizeBytes()).toBeGreaterThan(0);
    expect(await log.truncateBefore(6)).toBe(5);
    const left: number[] = [];
    await log.read(0, (e) => left.push(e.seq));
    expect(left).toEqual([6, 7, 8, 9, 10, 11, 12]);
    await log.close();
  }, 60_000);
});
