// Hostile uploads with the server's resident memory sampled (VmRSS of the server process every
// 25 ms): zip bombs, a DOCX whose XML inflates to 70 MB (refused by the XML cap, and with the cap
// raised, by the extraction memory watchdog), a PNG declaring 100,000 × 100,000 pixels, a PDF over
// MAX_FILE_PAGES. Each must answer 413 PAYLOAD_TOO_LARGE in the envelope, keep memory under a
// bound, store nothing, and leave the server answering. The peak RSS of every case is printed.
//
// Two servers: `main` (MAX_FILE_PAGES=50, defaults otherwise: DOCX_MAX_XML_MB=6) and `watchdog`
// (DOCX_MAX_XML_MB=200, so only the memory watchdog, EXTRACTION_MEMORY_MB=1024, stops the DOCX).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { deflateSync } from 'node:zlib';
import { paragraphBombDocx, ratioBombDocx, textPdf, zipBombDocx } from '../extract/fixtures';
import { TestServer } from '../helpers/server';
import {
  API,
  call,
  expectErrorAnswer,
  expectSameState,
  fingerprint,
  heartbeat,
  MiB,
  printServerErrors,
  reportRequests,
  requestsSent,
  rssOf,
  RssSampler,
  upload,
  type Answer,
} from './util';

const startedAt = requestsSent();
const EXTRACTION_TIMEOUT_MS = 120_000; // the server's default EXTRACTION_TIMEOUT_MS
const GiB = 1024 * MiB;

let main: TestServer;
let watchdog: TestServer;
let mainKb: string; // TEXT_AND_MEDIA_HIGH_QUALITY: images allowed
let watchdogKb: string;
const peaks: string[] = [];
/** Each server's RSS once started and set up, before any hostile upload. */
const startRss = new Map<TestServer, number>();

/** The 70 MB-of-XML DOCX (~7.8 MB packed), made once: building it takes seconds. */
let inflatedDocx: Uint8Array | undefined;
const inflated = () => (inflatedDocx ??= paragraphBombDocx(70_000_000));

async function setUp(server: TestServer): Promise<string> {
  const res = await call(server, 'POST', `${API}/knowledge-bases`, { name: 'Uploads', type: 'TEXT_AND_MEDIA_HIGH_QUALITY' }, undefined);
  if (res.status !== 201) throw new Error(`create KB: ${res.status} ${res.raw}`);
  const kb = res.body.data.id as string;
  const c = await call(server, 'POST', `${API}/knowledge-bases/${kb}/contents?wait=true`, { text: 'The falcon upload fixture.' });
  if (c.body.data?.status !== 'ready') throw new Error(`add content: ${c.status} ${c.raw}`);
  return kb;
}

beforeAll(async () => {
  [main, watchdog] = await Promise.all([TestServer.start({ env: { MAX_FILE_PAGES: '50' } }), TestServer.start({ env: { DOCX_MAX_XML_MB: '200' } })]);
  [mainKb, watchdogKb] = await Promise.all([setUp(main), setUp(watchdog)]);
  for (const s of [main, watchdog]) startRss.set(s, rssOf(s.proc.pid));
}, 120_000);

afterAll(async () => {
  printServerErrors(main, 'uploads/main');
  printServerErrors(watchdog, 'uploads/watchdog');
  await Promise.all([main?.stop(), watchdog?.stop()]);
  main?.cleanup();
  watchdog?.cleanup();
  console.log(`[hostile] peak RSS per hostile upload:\n  ${peaks.join('\n  ')}`);
  reportRequests('uploads.test.ts', startedAt);
});

interface Case {
  name: string;
  server: () => TestServer;
  kb: () => string;
  files: () => { name: string; bytes: Uint8Array }[];
  /** Most the server's RSS may grow over its level before the upload. */
  maxGrowth: number;
  /** Most the upload may take. */
  maxMs: number;
}

const signedMiB = (bytes: number) => `${bytes >= 0 ? '+' : '−'}${Math.abs(Math.round(bytes / MiB))}`;

/**
 * Uploads the files at once while sampling RSS and sending other requests; each upload must be
 * 413 PAYLOAD_TOO_LARGE within the time, the state unchanged, the server still answering.
 */
async function hostileUpload(c: Case): Promise<void> {
  const server = c.server();
  const kb = c.kb();
  const files = c.files();
  const before = await fingerprint(server);
  const sampler = new RssSampler(server.proc.pid, 25);
  const started = performance.now();
  const uploads = Promise.all(files.map((f) => upload(server, kb, { name: f.name, bytes: f.bytes }).then((res) => ({ res, ms: performance.now() - started }))));
  const beat = heartbeat(server, kb, uploads, 100);
  let answers: { res: Answer; ms: number }[];
  let mem: ReturnType<RssSampler['stop']>;
  try {
    answers = await uploads;
  } finally {
    mem = sampler.stop();
  }
  const beats = await beat;
  const line =
    `${c.name}: baseline ${Math.round(mem.baseline / MiB)} MiB, peak ${Math.round(mem.peak / MiB)} MiB (+${Math.round(mem.growth / MiB)} MiB, bound +${Math.round(c.maxGrowth / MiB)} MiB; ` +
    `${signedMiB(mem.peak - startRss.get(server)!)} MiB over the server's ${Math.round(startRss.get(server)! / MiB)} MiB after start-up), ` +
    `${answers.map((a) => `${a.res.status} in ${Math.round(a.ms)} ms`).join(', ')}; ${beats.count} other requests meanwhile, slowest ${Math.round(beats.maxMs)} ms`;
  peaks.push(line);
  console.log(`[hostile] ${line}`);
  for (const [i, a] of answers.entries()) {
    expectErrorAnswer(a.res, 413, 'PAYLOAD_TOO_LARGE', `${c.name}: upload of ${files[i]!.name}`);
    expect(a.ms).toBeLessThan(c.maxMs);
  }
  expect(mem.growth).toBeLessThan(c.maxGrowth);
  expect(beats.failures).toEqual([]);
  // Still serving: health, a read, a search and a small upload that works.
  expect((await call(server, 'GET', '/health', undefined, null)).status).toBe(200);
  expectSameState(before, await fingerprint(server), c.name);
  const ok = await upload(server, kb, { name: 'after.txt', bytes: 'falcon text uploaded after the hostile one' });
  expect(ok.status).toBe(201);
  expect((await call(server, 'DELETE', `${API}/knowledge-bases/${kb}/contents/${ok.body.data.id}`)).status).toBe(200);
}

// --- files -------------------------------------------------------------------------------------

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  const typed = new Uint8Array(4 + data.length);
  typed.set(new TextEncoder().encode(type));
  typed.set(data, 4);
  out.set(typed, 4);
  view.setUint32(8 + data.length, crc32(typed));
  return out;
}

/** A well-formed PNG header declaring `width` × `height` RGB pixels, with a few rows of real data. */
function hugePng(width: number, height: number): Uint8Array {
  const ihdr = new Uint8Array(13);
  const view = new DataView(ihdr.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, deflate, adaptive filter, no interlace
  const rows = deflateSync(new Uint8Array(Math.min(width * 3 + 1, 1 << 20) * 4)); // four rows of zeros
  const parts = [
    new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', rows),
    pngChunk('IEND', new Uint8Array()),
  ];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

// --- cases -------------------------------------------------------------------------------------

describe('hostile uploads (413, memory bounded, server keeps answering)', () => {
  const onMain = { server: () => main, kb: () => mainKb };

  test('a DOCX zip bomb (4 GiB declared) and a 1,000-fold ratio bomb', async () => {
    await hostileUpload({
      ...onMain,
      name: 'zip bomb DOCX (zipBombDocx)',
      files: () => [{ name: 'bomb.docx', bytes: zipBombDocx() }],
      maxGrowth: 600 * MiB,
      maxMs: 30_000,
    });
    await hostileUpload({
      ...onMain,
      name: 'ratio bomb DOCX (ratioBombDocx, 64 MiB of zeros)',
      files: () => [{ name: 'ratio.docx', bytes: ratioBombDocx() }],
      maxGrowth: 600 * MiB,
      maxMs: 30_000,
    });
  }, 120_000);

  test('a DOCX whose document.xml inflates to 70 MB is refused by the XML cap (DOCX_MAX_XML_MB default)', async () => {
    const docx = inflated();
    expect(docx.length).toBeGreaterThan(7 * MiB);
    expect(docx.length).toBeLessThan(9 * MiB);
    await hostileUpload({
      ...onMain,
      name: 'inflated-XML DOCX, XML cap',
      files: () => [{ name: 'paragraphs.docx', bytes: docx }],
      maxGrowth: 600 * MiB,
      maxMs: 60_000,
    });
  }, 120_000);

  test('two inflated DOCX uploads at once are both refused by the XML cap', async () => {
    const docx = inflated();
    await hostileUpload({
      ...onMain,
      name: 'two inflated-XML DOCX at once, XML cap',
      files: () => [
        { name: 'a.docx', bytes: docx },
        { name: 'b.docx', bytes: docx },
      ],
      maxGrowth: 600 * MiB,
      maxMs: 60_000,
    });
  }, 120_000);

  test('a PNG declaring 100,000 × 100,000 pixels (and other overflowing sizes) to a TEXT_AND_MEDIA_HIGH_QUALITY knowledge base', async () => {
    await hostileUpload({
      ...onMain,
      name: 'PNG 100,000 × 100,000',
      files: () => [{ name: 'huge.png', bytes: hugePng(100_000, 100_000) }],
      maxGrowth: 600 * MiB,
      maxMs: 30_000,
    });
    await hostileUpload({
      ...onMain,
      name: 'PNG 65,536 × 65,536 and 1 × 2,147,483,647',
      files: () => [
        { name: 'square.png', bytes: hugePng(65_536, 65_536) },
        { name: 'tall.png', bytes: hugePng(1, 0x7fffffff) },
      ],
      maxGrowth: 600 * MiB,
      maxMs: 30_000,
    });
  }, 120_000);

  test('a 60-page PDF over MAX_FILE_PAGES=50', async () => {
    const pdf = await textPdf(Array.from({ length: 60 }, (_, i) => [[`Page ${i + 1} about falcons.`]]));
    await hostileUpload({
      ...onMain,
      name: 'PDF of 60 pages (MAX_FILE_PAGES=50)',
      files: () => [{ name: 'long.pdf', bytes: pdf }],
      maxGrowth: 600 * MiB,
      maxMs: 30_000,
    });
  }, 120_000);

  test(
    'with DOCX_MAX_XML_MB=200 the memory watchdog (EXTRACTION_MEMORY_MB=1024) stops the inflated DOCX: 413 within the time limit',
    async () => {
      await hostileUpload({
        server: () => watchdog,
        kb: () => watchdogKb,
        name: 'inflated-XML DOCX, memory watchdog',
        files: () => [{ name: 'paragraphs.docx', bytes: inflated() }],
        maxGrowth: 1.6 * GiB,
        maxMs: EXTRACTION_TIMEOUT_MS,
      });
    },
    EXTRACTION_TIMEOUT_MS + 60_000,
  );

  test(
    'two inflated DOCX uploads at once under the watchdog do not take the server down',
    async () => {
      // Each extraction may grow the process by EXTRACTION_MEMORY_MB before it is stopped, and the
      // memory of a stopped worker comes back only over the next moments: twice the single bound.
      await hostileUpload({
        server: () => watchdog,
        kb: () => watchdogKb,
        name: 'two inflated-XML DOCX at once, memory watchdog',
        files: () => [
          { name: 'a.docx', bytes: inflated() },
          { name: 'b.docx', bytes: inflated() },
        ],
        maxGrowth: 3.2 * GiB,
        maxMs: EXTRACTION_TIMEOUT_MS,
      });
      expect(watchdog.proc.exitCode).toBeNull();
    },
    EXTRACTION_TIMEOUT_MS + 60_000,
  );
});
