// A node takes an indexing job only once it has applied the record that made the job's version.
// That wait is bounded and counts against the node's room: a node whose log stopped moving must
// not pull every job in the cluster and hold it for ever behind its keep-alive (items would stay
// pending on every node). Jobs for records not yet written stand in for such a stall here.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Engine } from '../../engine';
import { JetStreamJobs } from '../../engine/ingest/jetstream-jobs';
import { openEngine } from '../../snapshots';
import { eventually } from '../helpers/eventually';
import { NO_EMBEDDING, textKbConfig } from '../helpers/kb-config';
import { NATS_SERVER, NatsCluster } from '../helpers/nats';

const STREAM = 'KB_JOB_FOLLOW';
const ORG = 'org_follow';
let nats: NatsCluster;
let dataDir: string;
let engine: Engine;
const warnings: { message: string; details?: Record<string, unknown> }[] = [];

beforeAll(async () => {
  if (!existsSync(NATS_SERVER)) throw new Error(`${NATS_SERVER} is missing: run "bun scripts/test-deps.ts"`);
  nats = await NatsCluster.start(1);
  dataDir = mkdtempSync(join(tmpdir(), 'kb-job-follow-'));
  ({ engine } = await openEngine({
    dataDir,
    // Room for 1 worker × 4 items × 2 jobs.
    compute: { documentWorkers: 1, settings: { allowRemoteModels: false, threads: 1 } },
    batchItems: 4,
    log: (level, message, details) => {
      if (level === 'warn') warnings.push({ message, details });
    },
    cluster: { servers: nats.urls, stream: STREAM, replicas: 1, nodeId: 'a', advertiseUrl: 'http://a.invalid', heartbeatMs: 200, jobFollowWaitMs: 1500 },
  }));
  engine.startIngestion();
}, 60_000);

afterAll(async () => {
  await engine?.close();
  await nats?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

test('jobs waiting for unapplied records are bounded by the room, handed back, and taken once applied', async () => {
  const kb = await engine.createKnowledgeBase(ORG, { name: 'kb', description: '', type: 'TEXT_HIGH_QUALITY', config: textKbConfig(NO_EMBEDDING) });
  const nc = await connect({ servers: nats.urls });
  try {
    const jsm = await jetstreamManager(nc);
    // 40 jobs for a record 10 past the stream's end.
    const ahead = (await jsm.streams.info(STREAM)).state.last_seq + 10;
    const jobs = await JetStreamJobs.open({ servers: nats.urls, stream: `${STREAM}_JOBS`, replicas: 1 });
    try {
      for (let i = 0; i < 40; i++) await jobs.publish({ kbId: kb.id, id: `ct_stalled${i}`, version: 1, seq: ahead }, 'backlog');
    } finally {
      await jobs.close();
    }
    const consumer = () => jsm.consumers.info(`${STREAM}_JOBS`, 'indexers-s0');
    // Held (delivered, not acknowledged) stays within the room, however long the node waits: 8
    // waiting, plus up to 8 handed back that JetStream keeps pending for their 1 s redelivery delay.
    let mostHeld = 0;
    const until = Date.now() + 4000;
    while (Date.now() < until) {
      mostHeld = Math.max(mostHeld, (await consumer()).num_ack_pending);
      await Bun.sleep(100);
    }
    expect(mostHeld).toBeGreaterThan(0);
    expect(mostHeld).toBeLessThanOrEqual(16);

    // Each went back after the wait, said so, and was delivered again.
    const handedBack = warnings.filter((w) => w.message.includes('has not applied'));
    expect(handedBack.length).toBeGreaterThan(0);
    expect(handedBack[0]!.details).toMatchObject({ kbId: kb.id, seq: ahead });
    expect((await consumer()).num_redelivered).toBeGreaterThan(0);

    // Records written past that point: the waiting jobs are taken (their items do not exist: done),
    // and the new items' own jobs get their turn.
    const items: { id: string }[] = [];
    for (let i = 0; i < 12; i++) items.push(await engine.addContent(ORG, kb.id, { text: `Refund policy number ${i}: returns within thirty days.` }));
    await eventually(
      'every job is over and every item indexed',
      async () => {
        const c = await consumer();
        return { pending: c.num_pending, held: c.num_ack_pending, statuses: items.map((it) => engine.getContent(ORG, kb.id, it.id).status) };
      },
      (x) => x.pending === 0 && x.held === 0 && x.statuses.every((s) => s === 'ready'),
      30_000,
    );
  } finally {
    await nc.close();
  }
}, 90_000);
