// One organization's indexing backlog must not hold back another organization's small write.
// Organization B (OTHER_ORG) queues a backlog of items without waiting; organization A (ORG) then
// adds a single item. Indexing interleaves organizations (engine/ingest/fair-queue.ts), so A's item
// is indexed after at most the batches already sent to the document workers when it arrived, not
// after B's whole backlog (before the fix: first come, first served, A ready after all of B's).
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { OTHER_KEY, OTHER_ORG, InProcessServer } from '../helpers/server';
import { API, call, printServerErrors, reportRequests, requestsSent, type Auth } from './util';

const startedAt = requestsSent();
const B: Auth = { org: OTHER_ORG, key: OTHER_KEY };
/** Organization B's backlog. */
const BACKLOG = 150;
/** The server's defaults: items per ingestion batch, and batches in flight per document worker (INGEST_WORKERS=1 in tests). */
const BATCH_ITEMS = 16;
const IN_FLIGHT = 2;

let server: InProcessServer;
let kbA: string;
let kbB: string;

const WORDS = 'river mountain lantern copper meadow harbor violet engine canyon thunder marble orchard glacier pepper falcon'.split(' ');
/** About `length` characters of distinct sentences (each item its own text, so every item costs real embedding work). */
function text(tag: string, i: number, length: number): string {
  let out = `${tag} note ${i} about okapis. `;
  for (let k = i; out.length < length; k++)
    out += `The ${WORDS[k % 15]} near the ${WORDS[(k * 7 + 3) % 15]} was ${WORDS[((k + i) * 11 + 5) % 15]} on day ${k}. `;
  return out;
}

async function createKb(name: string, auth?: Auth): Promise<string> {
  const res = await call(server, 'POST', `${API}/knowledge-bases`, { name, type: 'TEXT_HIGH_QUALITY' }, auth);
  expect(res.status).toBe(201);
  return res.body.data.id;
}

/** Items of a knowledge base by status (its read carries the ingestion progress). */
async function statuses(kb: string, auth?: Auth): Promise<{ pending: number; processing: number; ready: number; failed: number }> {
  const res = await call(server, 'GET', `${API}/knowledge-bases/${kb}`, undefined, auth);
  expect(res.status).toBe(200);
  return res.body.data.ingestion.contents;
}

beforeAll(async () => {
  server = await InProcessServer.start();
  kbA = await createKb('A small');
  kbB = await createKb('B backlog', B);
  // Warm up both (the model loads on first use), so the measurement is indexing alone.
  for (const [kb, auth] of [
    [kbA, undefined],
    [kbB, B],
  ] as const) {
    const res = await call(server, 'POST', `${API}/knowledge-bases/${kb}/contents?wait=true`, { text: text('warm', 0, 400) }, auth);
    expect(res.body.data?.status).toBe('ready');
  }
}, 120_000);

afterAll(async () => {
  printServerErrors(server, 'tenants-indexing');
  await server?.stop();
  server?.cleanup();
  reportRequests('tenants-indexing.test.ts', startedAt);
});

test("an organization's single item is indexed within the batches in flight, not after another organization's backlog", async () => {
  const started = performance.now();
  const seconds = (from = started) => Math.round((performance.now() - from) / 100) / 10;
  // B queues its backlog as fast as it can (no wait), eight requests at a time.
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < BACKLOG) {
        const i = next++;
        const res = await call(server, 'POST', `${API}/knowledge-bases/${kbB}/contents`, { text: text('B', i, 1500) }, B);
        expect(res.status).toBe(201);
      }
    }),
  );
  const queuedSeconds = seconds();

  // A adds one item the moment B's backlog is queued. B's progress is read once A's item is queued
  // (its write acknowledged), so what B had indexed by then does not count as overtaking A.
  const aStarted = performance.now();
  const added = await call(server, 'POST', `${API}/knowledge-bases/${kbA}/contents`, { text: text('A', 0, 1500) });
  expect(added.status).toBe(201);
  const idA: string = added.body.data.id;
  const before = await statuses(kbB, B);

  // Follow A's item and B's backlog together until A's item is ready.
  let aReadySeconds = 0;
  let atAReady = before;
  for (;;) {
    const [a, b] = await Promise.all([call(server, 'GET', `${API}/knowledge-bases/${kbA}/contents/${idA}`), statuses(kbB, B)]);
    expect(a.status).toBe(200);
    if (a.body.data.status === 'ready') {
      aReadySeconds = seconds(aStarted);
      atAReady = b;
      break;
    }
    expect(a.body.data.status).not.toBe('failed');
    await Bun.sleep(25);
  }
  // Then B's whole backlog.
  let done = atAReady;
  while (done.ready + done.failed < BACKLOG + 1) {
    await Bun.sleep(100);
    done = await statuses(kbB, B);
  }
  const backlogSeconds = seconds(aStarted);

  // B's items indexed after A's item arrived and before it was ready.
  const overtaking = atAReady.ready - before.ready;
  const waitingAtAReady = BACKLOG + 1 - atAReady.ready - atAReady.failed;
  console.log(
    `[hostile] tenants-indexing: B queued ${BACKLOG} items in ${queuedSeconds} s (${before.ready - 1} of them indexed when A's item was queued); ` +
      `A's item ready after ${aReadySeconds} s; B's backlog done after ${backlogSeconds} s; ` +
      `B items indexed before A's = ${overtaking} (bound ${BATCH_ITEMS * IN_FLIGHT}); B items still waiting when A's was ready = ${waitingAtAReady}`,
  );

  expect(done.failed).toBe(0);
  // At most the batches already in flight when A's item arrived: one batch per in-flight slot.
  expect(overtaking).toBeLessThanOrEqual(BATCH_ITEMS * IN_FLIGHT);
  // And so most of B's backlog was still waiting, and A was ready long before B's backlog was done.
  expect(waitingAtAReady).toBeGreaterThan(BACKLOG / 2);
  expect(aReadySeconds).toBeLessThan(backlogSeconds / 2);
}, 600_000);
