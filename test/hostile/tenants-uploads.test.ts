// One organization's expensive uploads must not starve another organization's uploads, and an
// image gets an OCR time budget. Organization A (ORG) sends OCR bombs: 1-bit noise PNGs, cheap to
// send and under the pixel cap, that tesseract reads for minutes. Meanwhile organization B
// (OTHER_ORG) uploads a 34-byte .txt, then (last case) a small PDF; in between, a .txt goes in
// while both heavy workers are on OCR (one image of each organization). Plain text runs in the light
// extraction lane, so it never waits for OCR; in the heavy lane one organization holds at most all
// but one worker and organizations take turns (engine/extract/lanes.ts, engine/workers/fair-slots.ts);
// an image past OCR_TIMEOUT_MS has its worker terminated and answers 413 saying so.
// Before the fix (one FIFO of EXTRACTION_WORKERS=2 for every format and organization, and only
// EXTRACTION_TIMEOUT_MS=120 s for an image), B's .txt waited for A's bombs (~2 minutes) and the
// bombs answered 502 after 120 s.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { textPdf } from '../extract/fixtures';
import { noisePng } from '../extract/noise';
import { OTHER_KEY, OTHER_ORG, TestServer } from '../helpers/server';
import {
  API,
  call,
  expectEnvelope,
  expectErrorAnswer,
  MiB,
  printServerErrors,
  reportRequests,
  requestsSent,
  RssSampler,
  upload,
  type Answer,
  type Auth,
} from './util';

const startedAt = requestsSent();
const B: Auth = { org: OTHER_ORG, key: OTHER_KEY };
/** The OCR budget the test server runs with (OCR_TIMEOUT_MS). */
const OCR_BUDGET_MS = 5000;
/** Room for a loaded 2-core machine between the budget running out and the answer. */
const SLACK_MS = 25_000;

let server: TestServer;
let kbA: string; // TEXT_AND_MEDIA_HIGH_QUALITY: images are read by OCR
let kbB: string;

const SMALL_TEXT = 'Falcons nest on high cliff ledges.';

// --- helpers -----------------------------------------------------------------------------------

/** CPU seconds (user + system) the process has used so far. */
function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

/** The process's average CPU use (in cores) over `ms`. */
async function cpuCoresOver(pid: number, ms: number): Promise<number> {
  const before = cpuSecondsOf(pid);
  const started = performance.now();
  await Bun.sleep(ms);
  return (cpuSecondsOf(pid) - before) / ((performance.now() - started) / 1000);
}

/** CPU seconds so far of each thread of a process, by "tid name". */
function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(`${tid} ${name}`, (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** The threads that used the most CPU between two threadCpu readings. */
function busiestThreads(before: Map<string, number>, after: Map<string, number>): string {
  return [...after]
    .map(([thread, s]) => [thread, s - (before.get(thread) ?? 0)] as const)
    .filter(([, s]) => s > 0.05)
    .sort((x, y) => y[1] - x[1])
    .slice(0, 4)
    .map(([thread, s]) => `${thread} ${s.toFixed(2)} s`)
    .join('; ');
}

type Timed = { res: Answer; ms: number };
const timed =
  (from: number) =>
  (res: Answer): Timed => ({ res, ms: performance.now() - from });
const describeAnswers = (answers: Timed[]) =>
  answers.map((a) => `${a.res.status} ${a.res.body?.error?.code ?? ''} in ${Math.round(a.ms)} ms`.replace('  ', ' ')).join(', ');

async function createKb(name: string, type: string, auth?: Auth): Promise<string> {
  const res = await call(server, 'POST', `${API}/knowledge-bases`, { name, type }, auth);
  if (res.status !== 201) throw new Error(`create KB: ${res.status} ${res.raw}`);
  return res.body.data.id;
}

/** Waits until a content item is ready (its text was indexed). */
async function waitReady(kb: string, id: string, auth?: Auth, timeoutMs = 60_000): Promise<void> {
  const started = performance.now();
  for (;;) {
    const res = await call(server, 'GET', `${API}/knowledge-bases/${kb}/contents/${id}`, undefined, auth);
    if (res.body?.data?.status === 'ready') return;
    if (res.body?.data?.status === 'failed' || performance.now() - started > timeoutMs)
      throw new Error(`content ${id} not ready: ${res.status} ${res.raw.slice(0, 300)}`);
    await Bun.sleep(100);
  }
}

/** The budget's answer: 413 in the envelope, naming the budget and what to do. */
function expectBudgetAnswer(a: Timed, what: string): void {
  expectErrorAnswer(a.res, 413, 'PAYLOAD_TOO_LARGE', what);
  expect(a.res.body.error.message).toMatch(/longer than the 5 s OCR budget/);
  expect(a.res.body.error.message).toMatch(/smaller|cleaner/);
  expect(a.ms).toBeGreaterThanOrEqual(OCR_BUDGET_MS - 200);
  expect(a.ms).toBeLessThan(OCR_BUDGET_MS + SLACK_MS);
}

beforeAll(async () => {
  server = await TestServer.start({ env: { OCR_TIMEOUT_MS: String(OCR_BUDGET_MS) } });
  kbA = await createKb('A media', 'TEXT_AND_MEDIA_HIGH_QUALITY');
  kbB = await createKb('B text', 'TEXT_HIGH_QUALITY', B);
  // Warm up both (models load on first use), so the measurements are extraction alone.
  for (const [kb, auth] of [
    [kbA, undefined],
    [kbB, B],
  ] as const) {
    const res = await upload(server, kb, { name: 'warm.txt', bytes: 'A warm-up note about falcons.', auth });
    if (res.body?.data?.status !== 'ready') throw new Error(`warm-up: ${res.status} ${res.raw}`);
  }
}, 120_000);

afterAll(async () => {
  printServerErrors(server, 'tenants-uploads');
  await server?.stop();
  server?.cleanup();
  reportRequests('tenants-uploads.test.ts', startedAt);
});

test("another organization's 34-byte .txt answers in under 2 s while one organization's two OCR bombs are in; each bomb gets the OCR budget's answer", async () => {
  const bomb = noisePng(6000, 7);
  expect(bomb.length).toBeGreaterThan(4 * MiB); // ~4.5 MB, 36 M pixels: under the 40 M pixel cap
  expect(bomb.length).toBeLessThan(5 * MiB);
  const small = new TextEncoder().encode(SMALL_TEXT);
  expect(small.length).toBe(34);

  const sampler = new RssSampler(server.proc.pid, 25);
  const started = performance.now();
  const bombs = Promise.all([1, 2].map((i) => upload(server, kbA, { name: `noise-${i}.png`, bytes: bomb, wait: false }).then(timed(started))));
  await Bun.sleep(2000); // both bombs are in and in OCR

  const txtStarted = performance.now();
  const txt = timed(txtStarted)(await upload(server, kbB, { name: 'small.txt', bytes: small, auth: B, wait: false }));
  console.log(`[hostile] tenants-uploads: B's 34-byte .txt during two OCR bombs of A: ${txt.res.status} in ${Math.round(txt.ms)} ms`);
  const answers = await bombs;
  const mem = sampler.stop();
  console.log(
    `[hostile] tenants-uploads: A's two 6000 × 6000 noise PNGs (${(bomb.length / MiB).toFixed(1)} MiB each, OCR_TIMEOUT_MS=${OCR_BUDGET_MS}): ${describeAnswers(answers)}; first message: ${JSON.stringify(answers[0]!.res.body?.error?.message)}`,
  );
  console.log(
    `[hostile] tenants-uploads: server RSS during the bombs: baseline ${Math.round(mem.baseline / MiB)} MiB, peak ${Math.round(mem.peak / MiB)} MiB (+${Math.round(mem.growth / MiB)} MiB)`,
  );

  expectEnvelope(txt.res, 'the small .txt');
  expect(txt.res.status).toBe(201);
  expect(txt.ms).toBeLessThan(2000);
  for (const [i, a] of answers.entries()) expectBudgetAnswer(a, `bomb ${i + 1}`);
  expect(mem.growth).toBeLessThan(2048 * MiB); // each OCR worker stays under EXTRACTION_MEMORY_MB (1 GiB)

  // The bombs' workers were stopped, not left burning CPU: a bomb left running reads for minutes,
  // so the server must come down to idle within a few seconds (a loaded machine may take a moment
  // to tear a thread down). Each busy second names the threads that used it.
  await Bun.sleep(1000);
  const windows: string[] = [];
  let cores = Infinity;
  for (let i = 0; i < 10 && cores >= 0.5; i++) {
    const before = threadCpu(server.proc.pid);
    cores = await cpuCoresOver(server.proc.pid, 1000);
    windows.push(`${cores.toFixed(2)}${cores >= 0.5 ? ` (${busiestThreads(before, threadCpu(server.proc.pid))})` : ''}`);
  }
  console.log(`[hostile] tenants-uploads: server CPU after the bombs were answered, 1 s windows: ${windows.join(', ')} cores`);
  expect(cores).toBeLessThan(0.5);

  // Still serving: the .txt gets indexed, and A can upload again.
  await waitReady(kbB, txt.res.body.data.id, B);
  expect((await call(server, 'GET', '/health', undefined, null)).status).toBe(200);
  const after = await upload(server, kbA, { name: 'after.txt', bytes: 'falcon text uploaded after the bombs' });
  expect(after.status).toBe(201);
  expect(after.body.data.status).toBe('ready');
}, 400_000);

test('a .txt answers in under 2 s while both heavy workers are on OCR (one image of each organization)', async () => {
  const kbMediaB = await createKb('B media', 'TEXT_AND_MEDIA_HIGH_QUALITY', B);
  const started = performance.now();
  const images = Promise.all([
    upload(server, kbA, { name: 'a.png', bytes: noisePng(2000, 201), wait: false }).then(timed(started)),
    upload(server, kbMediaB, { name: 'b.png', bytes: noisePng(2000, 202), auth: B, wait: false }).then(timed(started)),
  ]);
  await Bun.sleep(1000); // both are in OCR: every heavy worker is busy

  const txt = timed(performance.now())(await upload(server, kbA, { name: 'small.txt', bytes: SMALL_TEXT, wait: false }));
  console.log(`[hostile] tenants-uploads: a 34-byte .txt while both heavy workers are on OCR: ${txt.res.status} in ${Math.round(txt.ms)} ms`);
  const answers = await images;
  console.log(`[hostile] tenants-uploads: the two 2000 × 2000 noise PNGs (one per organization): ${describeAnswers(answers)}`);

  expectEnvelope(txt.res, 'the small .txt');
  expect(txt.res.status).toBe(201);
  expect(txt.ms).toBeLessThan(2000);
  for (const [i, a] of answers.entries()) expectBudgetAnswer(a, `image ${i + 1}`);
  await waitReady(kbA, txt.res.body.data.id);
}, 400_000);

test("another organization's small PDF is not queued behind four slow images of one organization", async () => {
  const pdf = await textPdf([[['A short report about peregrine falcons.']]]);
  const started = performance.now();
  const images = Promise.all(
    [1, 2, 3, 4].map((i) => upload(server, kbA, { name: `slow-${i}.png`, bytes: noisePng(2000, 100 + i), wait: false }).then(timed(started))),
  );
  await Bun.sleep(1000); // all four are in: two running (before the fix), or one running and three waiting

  const pdfStarted = performance.now();
  const doc = timed(pdfStarted)(await upload(server, kbB, { name: 'report.pdf', bytes: pdf, auth: B, wait: false }));
  const docAt = performance.now() - started;
  console.log(`[hostile] tenants-uploads: B's small PDF behind four slow images of A: ${doc.res.status} in ${Math.round(doc.ms)} ms`);
  const answers = await images;
  console.log(`[hostile] tenants-uploads: A's four 2000 × 2000 noise PNGs: ${describeAnswers(answers)} (B's PDF answered at ${Math.round(docAt)} ms)`);

  expectEnvelope(doc.res, 'the small PDF');
  expect(doc.res.status).toBe(201);
  // Not behind any of A's images: a heavy worker is always left for another organization.
  expect(doc.ms).toBeLessThan(OCR_BUDGET_MS);
  for (const [i, a] of answers.entries()) {
    expectErrorAnswer(a.res, 413, 'PAYLOAD_TOO_LARGE', `slow image ${i + 1}`);
    expect(a.res.body.error.message).toMatch(/longer than the 5 s OCR budget/);
  }
  await waitReady(kbB, doc.res.body.data.id, B);
  expect((await call(server, 'GET', '/health', undefined, null)).status).toBe(200);
}, 400_000);
