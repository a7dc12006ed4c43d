// File uploads over real HTTP (POST /knowledge-bases/:id/contents/file, multipart/form-data):
// every accepted format end to end (extraction → content read with `source` → full-text search,
// PDF hits carrying their page), the error codes of decisions.md "Files", the size limits (declared
// and streamed), the `metadata` field, file-name sanitization, the originals kept under
// DATA_DIR/files, auth/tenancy, and a crash restart.
//
// Two servers: `server` (CHUNK_SIZE=300, CHUNK_OVERLAP=0, so each page of the test PDF becomes
// its own chunk and a hit's page is unambiguous) and `small` (MAX_FILE_BYTES=100000,
// MAX_TEXT_BYTES=2000). The files are generated here (test/extract/fixtures.ts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { PDFDocument } from 'pdf-lib';
import { enc, randomBytes, sampleDocx, textPdf, textPng, utf16 } from '../extract/fixtures';
import { createKb, KEY, ORG, OTHER_KEY, OTHER_ORG, InProcessServer, type RunningServer, TestServer, type ApiResponse } from '../helpers/server';
import { API, expectError, expectValidation, unknownId } from './util';

const MAIN_ENV = { CHUNK_SIZE: '300', CHUNK_OVERLAP: '0' };
const SMALL_ENV = { MAX_FILE_BYTES: '100000', MAX_TEXT_BYTES: '2000' };
const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const CONTENT_ID = /^ct_[0-9a-f]{28}$/;

// A process: the last test crashes it (kill -9).
let server: TestServer;
let small: InProcessServer;

beforeAll(async () => {
  [server, small] = await Promise.all([TestServer.start({ env: MAIN_ENV }), InProcessServer.start({ env: SMALL_ENV })]);
});

afterAll(async () => {
  await Promise.all([server?.stop(), small?.stop()]);
  server?.cleanup();
  small?.cleanup();
});

// --- helpers ----------------------------------------------------------------------------------

const contents = (kb: string) => `${API}/knowledge-bases/${kb}/contents`;
const fileUrl = (s: RunningServer, kb: string, wait = true) => `${s.url}${contents(kb)}/file${wait ? '?wait=true' : ''}`;
const authHeaders = (org = ORG, key = KEY): Record<string, string> => ({ 'x-service-organization-id': org, 'x-service-api-key': key });

async function toApi(res: Response): Promise<ApiResponse> {
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, body, headers: res.headers };
}

interface UploadFile {
  name: string;
  bytes: Uint8Array | string;
  type?: string;
}

/** A real multipart upload built by fetch from FormData (so fetch sets Content-Length). */
async function upload(
  s: RunningServer,
  kb: string,
  file: UploadFile | null,
  options: { metadata?: string; fields?: Record<string, string>; wait?: boolean; auth?: Record<string, string>; extraFiles?: UploadFile[] } = {},
): Promise<ApiResponse> {
  const form = new FormData();
  if (file) form.append('file', new Blob([file.bytes], { type: file.type ?? 'application/octet-stream' }), file.name);
  for (const extra of options.extraFiles ?? []) form.append('file', new Blob([extra.bytes], { type: extra.type ?? 'application/octet-stream' }), extra.name);
  if (options.metadata !== undefined) form.append('metadata', options.metadata);
  for (const [k, v] of Object.entries(options.fields ?? {})) form.append(k, v);
  const res = await fetch(fileUrl(s, kb, options.wait ?? true), { method: 'POST', headers: options.auth ?? authHeaders(), body: form });
  return toApi(res);
}

/** Upload that must be accepted and become ready; returns the content id. */
async function uploadReady(s: RunningServer, kb: string, file: UploadFile, options: { metadata?: string } = {}): Promise<string> {
  const res = await upload(s, kb, file, options);
  if (res.status !== 201) throw new Error(`upload of ${file.name} failed: ${res.status} ${JSON.stringify(res.body)}`);
  expect(res.body.success).toBe(true);
  expect(res.body.data.id).toMatch(CONTENT_ID);
  expect(res.body.data.status).toBe('ready');
  return res.body.data.id;
}

/** A hand-built multipart/form-data payload (exact bytes, e.g. for odd file names or streaming). */
function multipart(parts: Array<{ name: string; filename?: string; type?: string; data: Uint8Array | string }>): { body: Uint8Array; contentType: string } {
  const boundary = `----kbtest${crypto.randomUUID().replaceAll('-', '')}`;
  const chunks: Uint8Array[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.filename !== undefined) head += `Content-Type: ${p.type ?? 'application/octet-stream'}\r\n`;
    head += '\r\n';
    chunks.push(enc(head), typeof p.data === 'string' ? enc(p.data) : p.data, enc('\r\n'));
  }
  chunks.push(enc(`--${boundary}--\r\n`));
  return { body: new Uint8Array(Buffer.concat(chunks)), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** A body streamed in chunks (chunked transfer encoding: no Content-Length header). */
function streamOf(bytes: Uint8Array, chunkSize = 16 * 1024): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) {
        controller.close();
        return;
      }
      controller.enqueue(bytes.slice(at, at + chunkSize));
      at += chunkSize;
    },
  });
}

async function getContent(s: RunningServer, kb: string, id: string): Promise<any> {
  const res = await s.api('GET', `${contents(kb)}/${id}`);
  expect(res.status).toBe(200);
  return res.body.data;
}

async function search(s: RunningServer, kb: string, query: string, extra: Record<string, unknown> = {}): Promise<any[]> {
  const res = await s.api('POST', `${API}/knowledge-bases/${kb}/search/full-text`, { query, ...extra });
  expect(res.status).toBe(200);
  return res.body.data;
}

async function total(s: RunningServer, kb: string): Promise<number> {
  const res = await s.api('GET', contents(kb));
  expect(res.status).toBe(200);
  return res.body.total;
}

const filesDir = (s: RunningServer, kb: string) => join(s.dataDir, 'files', kb);
const listDir = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);

/** Waits (the engine removes originals in the background) until `check` holds. */
async function eventually(check: () => boolean, timeoutMs = 3000): Promise<boolean> {
  const started = performance.now();
  while (performance.now() - started < timeoutMs) {
    if (check()) return true;
    await Bun.sleep(20);
  }
  return check();
}

/** A refused upload left nothing behind: no item, no original, no temporary file. */
async function expectNothingStored(s: RunningServer, kb: string): Promise<void> {
  expect(await total(s, kb)).toBe(0);
  expect(listDir(filesDir(s, kb))).toEqual([]);
  // Temporary files are removed before the answer; allow a moment for a stray write stream.
  const tmp = join(s.dataDir, 'tmp');
  await eventually(() => listDir(tmp).length === 0, 1000);
  expect(listDir(tmp).map((name) => `${name} (${statSync(join(tmp, name)).size} bytes)`)).toEqual([]);
}

/** Every file under `dir`, relative paths. */
function walk(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const name of listDir(dir)) {
    const rel = prefix ? `${prefix}/${name}` : name;
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...walk(full, rel));
    else out.push(rel);
  }
  return out;
}

// The multi-page PDF (distinct words per page), also used by the restart test at the end.
const PAGE_WORDS = ['aardvark', 'bumblebee', 'chinchilla'];
const pageLines = (n: number, word: string) => [
  `Page ${n} of the quarterly report describes the ${word} programme.`,
  `Budget planning for the ${word} team continues next quarter.`,
  `Every figure on this page concerns the ${word} initiative only.`,
];
let pdfKb = '';
let pdfId = '';
let pdfBytes: Uint8Array;

// --- accepted formats -------------------------------------------------------------------------

describe('accepted formats', () => {
  test('multi-page PDF: text searchable, hits carry the page, source has pages = 3', async () => {
    pdfKb = await createKb(server, 'PDF');
    pdfBytes = await textPdf(PAGE_WORDS.map((w, i) => [pageLines(i + 1, w)]));
    // The client's Content-Type is only a hint: the bytes decide.
    pdfId = await uploadReady(server, pdfKb, { name: 'report.pdf', bytes: pdfBytes, type: 'text/plain' });
    const item = await getContent(server, pdfKb, pdfId);
    expect(item.status).toBe('ready');
    expect(item.source).toEqual({ fileName: 'report.pdf', mediaType: 'application/pdf', size: pdfBytes.length, pages: 3 });
    for (const [i, w] of PAGE_WORDS.entries()) expect(item.contentChunk).toContain(pageLines(i + 1, w)[0]!);
    expect(item.contentChunk.indexOf('aardvark')).toBeLessThan(item.contentChunk.indexOf('bumblebee'));
    expect(item.contentChunk.indexOf('bumblebee')).toBeLessThan(item.contentChunk.indexOf('chinchilla'));
    expect(item.chunkCount).toBe(3);
    for (const [i, w] of PAGE_WORDS.entries()) {
      const hits = await search(server, pdfKb, w);
      expect(hits.length).toBe(1);
      expect(hits[0]).toMatchObject({ contentId: pdfId, page: i + 1 });
      expect(hits[0].contentChunk).toContain(w);
      for (const other of PAGE_WORDS.filter((o) => o !== w)) expect(hits[0].contentChunk).not.toContain(other);
    }
    // Words common to every page: one hit per page, each with its own page number.
    const all = await search(server, pdfKb, 'quarterly report');
    expect(all.map((h) => h.page).sort()).toEqual([1, 2, 3]);
  });

  test('DOCX: heading, paragraphs and table cells are searchable', async () => {
    const kb = await createKb(server, 'DOCX');
    const docx = await sampleDocx();
    const id = await uploadReady(server, kb, { name: 'travel.docx', bytes: docx });
    const item = await getContent(server, kb, id);
    expect(item.source).toEqual({ fileName: 'travel.docx', mediaType: DOCX_TYPE, size: docx.length });
    expect(item.contentChunk).toContain('# Travel Policy');
    expect(item.contentChunk).toContain('Employees book flights through the travel portal.');
    expect(item.contentChunk).toContain('Lisbon | 38 EUR');
    for (const q of ['Lisbon', 'Berlin', 'portal', 'diem']) {
      const hits = await search(server, kb, q);
      expect(hits.map((h) => h.contentId)).toContain(id);
      expect(hits[0].page).toBeUndefined(); // only paged sources carry a page
    }
    expect((await search(server, kb, 'Lisbon'))[0].contentChunk).toContain('Lisbon | 38 EUR');
  });

  test('HTML: script, style and navigation words are not indexed; body words are', async () => {
    const kb = await createKb(server, 'HTML');
    const html = `<!doctype html><html><head><title>Zoo guide</title>
      <style>.quokkastyle { color: red }</style><script>var wombatscript = 1;</script></head>
      <body><nav><a href="/">marmotnav home</a></nav>
      <main><h1>Pangolin care</h1><p>Pangolins eat ants and termites in the evening.</p></main>
      <script>trackNarwhalclick();</script></body></html>`;
    const id = await uploadReady(server, kb, { name: 'guide.html', bytes: html, type: 'text/html' });
    const item = await getContent(server, kb, id);
    expect(item.source).toMatchObject({ fileName: 'guide.html', mediaType: 'text/html', size: enc(html).length });
    expect(item.contentChunk).toContain('# Pangolin care');
    for (const noise of ['quokkastyle', 'wombatscript', 'marmotnav', 'trackNarwhalclick', 'color']) {
      expect(item.contentChunk).not.toContain(noise);
      expect(await search(server, kb, noise)).toEqual([]);
    }
    expect((await search(server, kb, 'termites')).map((h) => h.contentId)).toEqual([id]);
  });

  test('CSV: each row carries the header names', async () => {
    const kb = await createKb(server, 'CSV');
    const csv = 'city,country,population\r\nBerlin,Germany,3600000\r\nLisbon,Portugal,545000\r\n';
    const id = await uploadReady(server, kb, { name: 'cities.csv', bytes: csv, type: 'text/csv' });
    const item = await getContent(server, kb, id);
    expect(item.source).toEqual({ fileName: 'cities.csv', mediaType: 'text/csv', size: csv.length });
    expect(item.contentChunk).toBe('city: Berlin | country: Germany | population: 3600000\ncity: Lisbon | country: Portugal | population: 545000');
    const hits = await search(server, kb, 'Portugal');
    expect(hits.map((h) => h.contentId)).toEqual([id]);
    expect(hits[0].contentChunk).toContain('city: Lisbon');
  });

  test('JSON: key paths and values', async () => {
    const kb = await createKb(server, 'JSON');
    const json = JSON.stringify({ product: { name: 'Walrus widget', sku: 'WW-1' }, tags: ['arctic'] });
    const id = await uploadReady(server, kb, { name: 'product.json', bytes: json, type: 'application/json' });
    const item = await getContent(server, kb, id);
    expect(item.source).toEqual({ fileName: 'product.json', mediaType: 'application/json', size: json.length });
    expect(item.contentChunk).toContain('product.name: Walrus widget');
    expect(item.contentChunk).toContain('tags[0]: arctic');
    expect((await search(server, kb, 'walrus')).map((h) => h.contentId)).toEqual([id]);
    expect((await search(server, kb, 'arctic')).map((h) => h.contentId)).toEqual([id]);
  });

  test('Markdown: kept as written', async () => {
    const kb = await createKb(server, 'Markdown');
    const md = '# Onboarding\n\nNew hires meet their mentor on the first day.\n\n## Equipment\n\nLaptops are ordered by the helpdesk.';
    const id = await uploadReady(server, kb, { name: 'onboarding.md', bytes: md });
    const item = await getContent(server, kb, id);
    expect(item.source).toEqual({ fileName: 'onboarding.md', mediaType: 'text/markdown', size: md.length });
    expect(item.contentChunk).toBe(md);
    expect((await search(server, kb, 'mentor')).map((h) => h.contentId)).toEqual([id]);
  });

  test('UTF-16 LE text with a byte-order mark is decoded', async () => {
    const kb = await createKb(server, 'UTF-16');
    const text = 'Grüße aus Köln: the ocelot exhibit opens in May.';
    const bytes = utf16(text, 'le');
    const id = await uploadReady(server, kb, { name: 'greeting.txt', bytes, type: 'text/plain' });
    const item = await getContent(server, kb, id);
    expect(item.source).toEqual({ fileName: 'greeting.txt', mediaType: 'text/plain', size: bytes.length });
    expect(item.contentChunk).toBe(text);
    expect((await search(server, kb, 'ocelot')).map((h) => h.contentId)).toEqual([id]);
  });

  test('without ?wait the answer is { id } and the item becomes ready', async () => {
    const kb = await createKb(server, 'No wait');
    const res = await upload(server, kb, { name: 'a.txt', bytes: 'The capybara is the largest rodent.' }, { wait: false });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ success: true, data: { id: expect.stringMatching(CONTENT_ID) } });
    const id = res.body.data.id;
    let item = await getContent(server, kb, id);
    for (let i = 0; i < 200 && item.status !== 'ready'; i++) {
      await Bun.sleep(25);
      item = await getContent(server, kb, id);
    }
    expect(item.status).toBe('ready');
    expect(item.source).toMatchObject({ fileName: 'a.txt', mediaType: 'text/plain' });
    expect((await search(server, kb, 'capybara')).map((h) => h.contentId)).toEqual([id]);
  });

  test('PNG in a TEXT_AND_MEDIA_HIGH_QUALITY KB is read by OCR; in a TEXT_HIGH_QUALITY KB it is 400 UNSUPPORTED_FILE_TYPE', async () => {
    const png = textPng(['Quarterly refund policy', 'Invoices are due in 30 days']);
    const media = await createKb(server, 'Media', 'TEXT_AND_MEDIA_HIGH_QUALITY');
    const id = await uploadReady(server, media, { name: 'scan.png', bytes: png, type: 'image/png' });
    const item = await getContent(server, media, id);
    expect(item.source).toEqual({ fileName: 'scan.png', mediaType: 'image/png', size: png.length });
    expect(item.contentChunk.toLowerCase()).toContain('refund policy');
    expect((await search(server, media, 'invoices')).map((h) => h.contentId)).toEqual([id]);

    const textOnly = await createKb(server, 'Text only');
    expectError(await upload(server, textOnly, { name: 'scan.png', bytes: png, type: 'image/png' }), 400, 'UNSUPPORTED_FILE_TYPE');
    await expectNothingStored(server, textOnly);
  }, 30_000);
});

// --- refused files ----------------------------------------------------------------------------

describe('refused files', () => {
  test('corrupt PDF → 502 EXTRACTION_FAILED', async () => {
    const kb = await createKb(server, 'Corrupt');
    const garbage = new Uint8Array([...enc('%PDF-1.7\n'), ...randomBytes(20_000)]);
    const res = await upload(server, kb, { name: 'report.pdf', bytes: garbage, type: 'application/pdf' });
    expectError(res, 502, 'EXTRACTION_FAILED');
    expect(res.body.error.requestId ?? res.headers.get('x-request-id')).toBeTruthy();
    await expectNothingStored(server, kb);
  });

  test('empty file → 400 EMPTY_FILE', async () => {
    const kb = await createKb(server, 'Empty');
    expectError(await upload(server, kb, { name: 'empty.txt', bytes: new Uint8Array(0), type: 'text/plain' }), 400, 'EMPTY_FILE');
    await expectNothingStored(server, kb);
  });

  test('renamed binaries → 400 UNSUPPORTED_FILE_TYPE (PNG named notes.txt in a text KB; random bytes named x.pdf)', async () => {
    const kb = await createKb(server, 'Renamed');
    expectError(await upload(server, kb, { name: 'notes.txt', bytes: textPng(['hello']), type: 'text/plain' }), 400, 'UNSUPPORTED_FILE_TYPE');
    expectError(await upload(server, kb, { name: 'x.pdf', bytes: randomBytes(4096), type: 'application/pdf' }), 400, 'UNSUPPORTED_FILE_TYPE');
    await expectNothingStored(server, kb);
  });

  test('the refusal names what the bytes were detected as', async () => {
    const kb = await createKb(server, 'Named');
    const random = await upload(server, kb, { name: 'x.pdf', bytes: randomBytes(4096), type: 'application/pdf' });
    expect(random.body.error.message).toStartWith('The file is binary data of no known format, a type that is not supported.');
    const zip = await upload(server, kb, {
      name: 'archive.zip',
      bytes: new Uint8Array([0x50, 0x4b, 0x03, 0x04, ...new Uint8Array(60)]),
      type: 'application/zip',
    });
    expectError(zip, 400, 'UNSUPPORTED_FILE_TYPE');
    expect(zip.body.error.message).toStartWith('The file is a .zip file (application/zip)');
    const sevenZip = await upload(server, kb, {
      name: 'a.7z',
      bytes: new Uint8Array([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c, 0, 4, ...randomBytes(64)]),
      type: 'application/x-7z-compressed',
    });
    expect(sevenZip.body.error.message).toStartWith('The file is a .7z file (application/x-7z-compressed)');
    await expectNothingStored(server, kb);
  });

  test('a valid file with no text (blank one-page PDF) → 400 NO_TEXT_EXTRACTED', async () => {
    const kb = await createKb(server, 'Blank');
    const doc = await PDFDocument.create();
    doc.addPage([595, 842]);
    const blank = await doc.save();
    expectError(await upload(server, kb, { name: 'blank.pdf', bytes: blank, type: 'application/pdf' }), 400, 'NO_TEXT_EXTRACTED');
    await expectNothingStored(server, kb);
  });
});

// --- size limits (small server: MAX_FILE_BYTES=100000, MAX_TEXT_BYTES=2000) ------------------

describe('gzip-compressed text', () => {
  test('faq.md.gz is unpacked and read as the Markdown it holds', async () => {
    const kb = await createKb(server, 'Compressed');
    const id = await uploadReady(server, kb, {
      name: 'faq.md.gz',
      bytes: gzipSync('# FAQ\n\nRefunds arrive within ten working days.'),
      type: 'application/gzip',
    });
    const item = (await server.api('GET', `${API}/knowledge-bases/${kb}/contents/${id}`)).body.data;
    expect(item.contentChunk).toContain('Refunds arrive within ten working days.');
    expect(item.source).toMatchObject({ fileName: 'faq.md.gz', mediaType: 'text/markdown' });
    const hits = (await server.api('POST', `${API}/knowledge-bases/${kb}/search/full-text`, { query: 'refunds' })).body.data;
    expect(hits.map((h: { contentId: string }) => h.contentId)).toEqual([id]);
  });

  test('a compressed PDF or image, a gzip bomb, damaged or twice-compressed bytes are refused, and nothing is stored', async () => {
    const kb = await createKb(server, 'Compressed refusals');
    const pdf = await upload(server, kb, { name: 'doc.pdf.gz', bytes: gzipSync(await textPdf([[['hello']]])) });
    expectError(pdf, 400, 'UNSUPPORTED_FILE_TYPE');
    expect(pdf.body.error.message).toBe('The file is a gzip-compressed PDF file; upload it uncompressed.');
    // 64 MiB of zeros packs into ~64 KiB: refused once it unpacks past the text limit, not unpacked whole.
    expectError(await upload(server, kb, { name: 'bomb.txt.gz', bytes: gzipSync(new Uint8Array(64 * 2 ** 20)) }), 413, 'PAYLOAD_TOO_LARGE');
    const damaged = gzipSync('some text that will be cut');
    expectError(await upload(server, kb, { name: 'cut.txt.gz', bytes: damaged.subarray(0, damaged.length - 12) }), 502, 'EXTRACTION_FAILED');
    expectError(await upload(server, kb, { name: 'twice.txt.gz.gz', bytes: gzipSync(gzipSync('text')) }), 400, 'UNSUPPORTED_FILE_TYPE');
    await expectNothingStored(server, kb);
  });
});

describe('size limits', () => {
  const big = () => enc('lorem ipsum dolor sit amet '.repeat(Math.ceil(200_000 / 27)).slice(0, 200_000));

  /** The server is still up (a refused upload must never take the process down). */
  async function expectAlive(s: RunningServer): Promise<void> {
    const res = await fetch(`${s.url}/health`).catch((err: Error) => err);
    expect(res instanceof Response ? res.status : `server gone (${String(res)}); last output:\n${s.output.slice(-6).join('\n')}`).toBe(200);
  }

  // The extraction caps first: the oversize-body cases below have crashed the server.
  test('extracted text over MAX_TEXT_BYTES → 413 PAYLOAD_TOO_LARGE (file itself under MAX_FILE_BYTES)', async () => {
    const kb = await createKb(small, 'Long text');
    const csv = `name,note\n${Array.from({ length: 200 }, (_, i) => `row${i},some words here`).join('\n')}`;
    expectError(await upload(small, kb, { name: 'long.csv', bytes: csv, type: 'text/csv' }), 413, 'PAYLOAD_TOO_LARGE');
    const pdf = await textPdf([[Array.from({ length: 60 }, (_, i) => `Line ${i} of a long page of text for the cap.`)]]);
    expectError(await upload(small, kb, { name: 'long.pdf', bytes: pdf, type: 'application/pdf' }), 413, 'PAYLOAD_TOO_LARGE');
    await expectNothingStored(small, kb);
  });

  test('MAX_TEXT_BYTES counts bytes like the text route: 1,500 "é" (3,000 UTF-8 bytes) → 413 on both routes', async () => {
    const kb = await createKb(small, 'Bytes not chars');
    const text = 'é'.repeat(1500);
    expectError(await small.api('POST', `${contents(kb)}?wait=true`, { text }), 413, 'PAYLOAD_TOO_LARGE');
    expectError(await upload(small, kb, { name: 'accents.txt', bytes: text, type: 'text/plain' }), 413, 'PAYLOAD_TOO_LARGE');
    await expectNothingStored(small, kb);
  });

  test('a streamed upload under the limit is accepted (the chunked path itself works)', async () => {
    const kb = await createKb(small, 'Small streamed');
    const { body, contentType } = multipart([{ name: 'file', filename: 'ok.txt', type: 'text/plain', data: 'A streamed note about the tapir.' }]);
    const res = await toApi(
      await fetch(fileUrl(small, kb), { method: 'POST', headers: { ...authHeaders(), 'content-type': contentType }, body: streamOf(body, 7) }),
    );
    expect(res.status).toBe(201);
    expect(res.body.data.status).toBe('ready');
    expect((await search(small, kb, 'tapir')).map((h) => h.contentId)).toEqual([res.body.data.id]);
  });

  test('a body declared far over the limit is refused before it is read, with the JSON error envelope', async () => {
    const kb = await createKb(small, 'Huge declared');
    const bytes = new Uint8Array(3 * 1024 * 1024).fill(0x61);
    const started = performance.now();
    const res = await upload(small, kb, { name: 'huge.txt', bytes, type: 'text/plain' });
    expect(performance.now() - started).toBeLessThan(3000);
    expectError(res, 413, 'PAYLOAD_TOO_LARGE');
    await expectAlive(small);
    await expectNothingStored(small, kb);
  });

  test('200 KB upload with Content-Length → 413 PAYLOAD_TOO_LARGE, quickly; nothing stored; the server stays up (15 times)', async () => {
    const kb = await createKb(small, 'Big declared');
    for (let i = 0; i < 15; i++) {
      const started = performance.now();
      const res = await upload(small, kb, { name: 'big.txt', bytes: big(), type: 'text/plain' });
      expect(performance.now() - started).toBeLessThan(3000);
      expectError(res, 413, 'PAYLOAD_TOO_LARGE');
      await expectAlive(small);
    }
    await expectNothingStored(small, kb);
  });

  test('200 KB streamed without Content-Length (chunked) → 413; nothing stored; the server stays up (15 times)', async () => {
    const kb = await createKb(small, 'Big streamed');
    for (let i = 0; i < 15; i++) {
      const { body, contentType } = multipart([{ name: 'file', filename: 'big.txt', type: 'text/plain', data: big() }]);
      const started = performance.now();
      const res = await toApi(
        await fetch(fileUrl(small, kb), { method: 'POST', headers: { ...authHeaders(), 'content-type': contentType }, body: streamOf(body) }),
      );
      expect(performance.now() - started).toBeLessThan(3000);
      expectError(res, 413, 'PAYLOAD_TOO_LARGE');
      await expectAlive(small);
    }
    await expectNothingStored(small, kb);
  });
});

// --- form fields ------------------------------------------------------------------------------

describe('multipart form', () => {
  test('a file sent to the JSON route …/contents → 400 pointing to …/contents/file; nothing stored', async () => {
    const kb = await createKb(server, 'Wrong route');
    const form = new FormData();
    form.append('file', new Blob(['hello']), 'hello.txt');
    const res = await toApi(await fetch(`${server.url}${API}/knowledge-bases/${kb}/contents`, { method: 'POST', headers: authHeaders(), body: form }));
    expectError(res, 400, 'INVALID_JSON');
    expect(res.body.error.message).toContain('files are uploaded to POST /api/v1/knowledge-bases/{id}/contents/file');
    await expectNothingStored(server, kb);
  });

  test('metadata: a JSON object is stored and filterable in search', async () => {
    const kb = await createKb(server, 'Metadata');
    const legal = await uploadReady(
      server,
      kb,
      { name: 'legal.txt', bytes: 'The heron contract renews yearly.' },
      { metadata: JSON.stringify({ team: 'legal', year: 2026, tags: ['contracts', 'renewal'], draft: false }) },
    );
    const ops = await uploadReady(server, kb, { name: 'ops.txt', bytes: 'The heron feeder is cleaned weekly.' }, { metadata: JSON.stringify({ team: 'ops' }) });
    expect((await getContent(server, kb, legal)).metadata).toEqual({ team: 'legal', year: 2026, tags: ['contracts', 'renewal'], draft: false });
    expect((await getContent(server, kb, ops)).metadata).toEqual({ team: 'ops' });
    expect((await search(server, kb, 'heron')).map((h) => h.contentId).sort()).toEqual([legal, ops].sort());
    const filtered = await search(server, kb, 'heron', { metadataFilter: { team: 'legal' } });
    expect(filtered.map((h) => h.contentId)).toEqual([legal]);
    expect(filtered[0].metadata).toEqual({ team: 'legal', year: 2026, tags: ['contracts', 'renewal'], draft: false });
    expect((await search(server, kb, 'heron', { metadataFilter: { tags: 'renewal' } })).map((h) => h.contentId)).toEqual([legal]);
    // No metadata field: {}
    const plain = await uploadReady(server, kb, { name: 'plain.txt', bytes: 'No metadata here.' });
    expect((await getContent(server, kb, plain)).metadata).toEqual({});
  });

  test('metadata: invalid JSON, nested object, non-objects → 400 VALIDATION_ERROR naming metadata; nothing stored', async () => {
    const kb = await createKb(server, 'Bad metadata');
    for (const bad of ['{not json', '{"a":{"b":1}}', '[1,2]', '["a"]', '"text"', '42', 'true', 'null', '{"a":[1,2]}', `{"${'k'.repeat(65)}":1}`]) {
      const res = await upload(server, kb, { name: 'a.txt', bytes: 'hello' }, { metadata: bad });
      expectValidation(res, 'metadata');
    }
    await expectNothingStored(server, kb);
  });

  test('an unknown form field → 400 naming it (before or after the file part)', async () => {
    const kb = await createKb(server, 'Unknown field');
    // FormData puts the file first, then the field.
    const after = await upload(server, kb, { name: 'a.txt', bytes: 'hello' }, { fields: { color: 'blue' } });
    expectValidation(after, 'color');
    // Repeated: the refused part arrives after the file's temporary write stream was opened, and the
    // temporary file must not survive the refusal (a race has left one behind about 1 in 150 times).
    for (let i = 0; i < 40; i++) {
      expectValidation(await upload(server, kb, { name: 'a.txt', bytes: 'y'.repeat(60_000) }, { fields: { color: 'blue' } }), 'color');
    }
    const { body, contentType } = multipart([
      { name: 'title', data: 'x' },
      { name: 'file', filename: 'a.txt', type: 'text/plain', data: 'hello' },
    ]);
    const before = await toApi(await fetch(fileUrl(server, kb), { method: 'POST', headers: { ...authHeaders(), 'content-type': contentType }, body }));
    expectValidation(before, 'title');
    // An unknown *file* part too.
    const form = new FormData();
    form.append('file', new Blob(['hello']), 'a.txt');
    form.append('attachment', new Blob(['world']), 'b.txt');
    const res = await toApi(await fetch(fileUrl(server, kb), { method: 'POST', headers: authHeaders(), body: form }));
    expectValidation(res, 'attachment');
    await expectNothingStored(server, kb);
  });

  test('missing file part → 400 naming file', async () => {
    const kb = await createKb(server, 'No file');
    expectValidation(await upload(server, kb, null, { metadata: '{"a":"b"}' }), 'file');
    expectValidation(await upload(server, kb, null), 'file');
    await expectNothingStored(server, kb);
  });

  test('two files → 400 naming file', async () => {
    const kb = await createKb(server, 'Two files');
    const res = await upload(server, kb, { name: 'a.txt', bytes: 'first file' }, { extraFiles: [{ name: 'b.txt', bytes: 'second file' }] });
    expectValidation(res, 'file');
    const bigger = 'x'.repeat(60_000);
    expectValidation(await upload(server, kb, { name: 'a.txt', bytes: bigger }, { extraFiles: [{ name: 'b.txt', bytes: bigger }] }), 'file');
    await expectNothingStored(server, kb);
  });

  test('non-multipart bodies → 400 VALIDATION_ERROR', async () => {
    const kb = await createKb(server, 'Not multipart');
    expectValidation(await server.api('POST', `${contents(kb)}/file`, { text: 'hello' }), 'file');
    expectValidation(await server.api('POST', `${contents(kb)}/file`, 'plain words', undefined, { 'content-type': 'text/plain' }), 'file');
    expectValidation(await server.api('POST', `${contents(kb)}/file`, undefined), 'file');
    // multipart without a boundary, and a multipart body that is garbage
    expectValidation(await server.api('POST', `${contents(kb)}/file`, 'xx', undefined, { 'content-type': 'multipart/form-data' }), 'file');
    expectValidation(await server.api('POST', `${contents(kb)}/file`, 'garbage', undefined, { 'content-type': 'multipart/form-data; boundary=abc' }), 'file');
    await expectNothingStored(server, kb);
  });

  test('?wait=maybe → 400 naming wait', async () => {
    const kb = await createKb(server, 'Bad wait');
    const form = new FormData();
    form.append('file', new Blob(['hello']), 'a.txt');
    const res = await toApi(await fetch(`${server.url}${contents(kb)}/file?wait=maybe`, { method: 'POST', headers: authHeaders(), body: form }));
    expectValidation(res, 'wait');
    await expectNothingStored(server, kb);
  });
});

// --- file names and originals on disk ---------------------------------------------------------

describe('file names and originals', () => {
  test('path-like names keep only their last component; nothing is written outside DATA_DIR/files/<kbId>', async () => {
    const kb = await createKb(server, 'Names');
    const ids: string[] = [];
    const cases: Array<[string, string]> = [
      ['../../etc/passwd.txt', 'passwd.txt'],
      ['a\\b\\c.txt', 'c.txt'],
      ['/abs/olute/name.md', 'name.md'],
      ['..\\..\\win.txt', 'win.txt'],
    ];
    for (const [sent, stored] of cases) {
      const { body, contentType } = multipart([{ name: 'file', filename: sent, type: 'text/plain', data: `escape attempt ${stored}` }]);
      const res = await toApi(await fetch(fileUrl(server, kb), { method: 'POST', headers: { ...authHeaders(), 'content-type': contentType }, body }));
      expect(res.status).toBe(201);
      ids.push(res.body.data.id);
      expect((await getContent(server, kb, res.body.data.id)).source.fileName).toBe(stored);
    }
    const held = listDir(filesDir(server, kb));
    expect(held.sort()).toEqual([...ids].sort());
    for (const name of held) expect(name).toMatch(CONTENT_ID);
    for (const rel of walk(server.dataDir)) {
      expect(rel).not.toMatch(/passwd|c\.txt|name\.md|win\.txt/);
    }
    for (const base of [filesDir(server, kb), join(server.dataDir, 'tmp'), server.dataDir]) {
      expect(existsSync(resolve(base, '../../etc/passwd.txt'))).toBe(false);
    }
  });

  test('a non-ASCII file name (UTF-8, as browsers and fetch send it) is stored as sent', async () => {
    const kb = await createKb(server, 'Unicode name');
    for (const name of ['résumé.txt', 'Grüße 東京.md']) {
      const id = await uploadReady(server, kb, { name, bytes: `A note called ${name}` });
      expect((await getContent(server, kb, id)).source.fileName).toBe(name);
    }
  });

  test('the original is kept byte for byte; deleting the content removes it', async () => {
    const kb = await createKb(server, 'Delete content');
    const docx = await sampleDocx();
    const id = await uploadReady(server, kb, { name: 'travel.docx', bytes: docx });
    const path = join(filesDir(server, kb), id);
    expect(existsSync(path)).toBe(true);
    expect(Buffer.from(readFileSync(path)).equals(Buffer.from(docx))).toBe(true);
    expect((await server.api('DELETE', `${contents(kb)}/${id}`)).status).toBe(200);
    expect(await eventually(() => !existsSync(path))).toBe(true);
    expect(await search(server, kb, 'Lisbon')).toEqual([]);
  });

  test('deleting the KB removes DATA_DIR/files/<kbId>', async () => {
    const kb = await createKb(server, 'Delete KB');
    await uploadReady(server, kb, { name: 'a.txt', bytes: 'first original' });
    await uploadReady(server, kb, { name: 'b.md', bytes: '# second original' });
    expect(listDir(filesDir(server, kb)).length).toBe(2);
    expect((await server.api('DELETE', `${API}/knowledge-bases/${kb}`)).status).toBe(200);
    expect(await eventually(() => !existsSync(filesDir(server, kb)))).toBe(true);
  });

  test('a text PUT on a file item replaces the text; source becomes "text" and the original is removed', async () => {
    const kb = await createKb(server, 'Put');
    const id = await uploadReady(server, kb, { name: 'old.txt', bytes: 'The old flamingo text.' }, { metadata: '{"team":"zoo"}' });
    const path = join(filesDir(server, kb), id);
    expect(existsSync(path)).toBe(true);
    const res = await server.api('PUT', `${contents(kb)}/${id}?wait=true`, { text: 'The new penguin text.' });
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('ready');
    const item = await getContent(server, kb, id);
    expect(item.contentChunk).toBe('The new penguin text.');
    expect(item.source).toBe('text');
    expect(item.metadata).toEqual({ team: 'zoo' });
    expect(await eventually(() => !existsSync(path))).toBe(true);
    expect((await search(server, kb, 'penguin')).map((h) => h.contentId)).toEqual([id]);
    expect(await search(server, kb, 'flamingo')).toEqual([]);
  });
});

// --- auth and tenancy -------------------------------------------------------------------------

describe('auth and tenancy', () => {
  test('unknown or malformed KB id → 404', async () => {
    expectError(await upload(server, unknownId('kb'), { name: 'a.txt', bytes: 'hello' }), 404, 'NOT_FOUND');
    expectError(await upload(server, 'not-an-id', { name: 'a.txt', bytes: 'hello' }), 404, 'NOT_FOUND');
    expect(listDir(join(server.dataDir, 'tmp'))).toEqual([]);
  });

  test('a KB of another organization → 404, nothing stored', async () => {
    const kb = await createKb(server, 'Mine');
    const res = await upload(server, kb, { name: 'a.txt', bytes: 'hello' }, { auth: authHeaders(OTHER_ORG, OTHER_KEY) });
    expectError(res, 404, 'NOT_FOUND');
    await expectNothingStored(server, kb);
  });

  test('401 without credentials or with a wrong key, answered before the body is read', async () => {
    const kb = await createKb(server, 'Auth');
    for (const headers of [{}, { 'x-service-organization-id': ORG }, authHeaders(ORG, 'wrong-key-000000000'), authHeaders(OTHER_ORG, KEY)]) {
      // A body that sends one chunk and then never ends: the answer must not wait for it.
      let cancelled = false;
      const stalled = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(enc('--b\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhello'));
        },
        cancel() {
          cancelled = true;
        },
      });
      const started = performance.now();
      const res = await Promise.race([
        fetch(fileUrl(server, kb), { method: 'POST', headers: { ...headers, 'content-type': 'multipart/form-data; boundary=b' }, body: stalled }).then(toApi),
        Bun.sleep(5000).then(() => null),
      ]);
      expect(res).not.toBeNull();
      expect(performance.now() - started).toBeLessThan(2000);
      expectError(res!, 401, 'UNAUTHORIZED');
      if (!cancelled) await stalled.cancel().catch(() => {});
    }
    await expectNothingStored(server, kb);
  });
});

// --- restart ----------------------------------------------------------------------------------

describe('restart', () => {
  test('after kill -9 and a restart, file content keeps its source and its page-carrying hits', async () => {
    expect(pdfId).toMatch(CONTENT_ID);
    const dataDir = server.dataDir;
    await server.kill9();
    server = await TestServer.start({ dataDir, env: MAIN_ENV });
    let item = await getContent(server, pdfKb, pdfId);
    for (let i = 0; i < 200 && item.status !== 'ready'; i++) {
      await Bun.sleep(25);
      item = await getContent(server, pdfKb, pdfId);
    }
    expect(item.status).toBe('ready');
    expect(item.source).toEqual({ fileName: 'report.pdf', mediaType: 'application/pdf', size: pdfBytes.length, pages: 3 });
    for (const [i, w] of PAGE_WORDS.entries()) {
      expect(item.contentChunk).toContain(w);
      const hits = await search(server, pdfKb, w);
      expect(hits.map((h) => ({ contentId: h.contentId, page: h.page }))).toEqual([{ contentId: pdfId, page: i + 1 }]);
    }
    expect(existsSync(join(filesDir(server, pdfKb), pdfId))).toBe(true);
    // Uploads keep working after the restart.
    const kb = await createKb(server, 'After restart');
    const id = await uploadReady(server, kb, { name: 'after.txt', bytes: 'The restart iguana.' });
    expect((await search(server, kb, 'iguana')).map((h) => h.contentId)).toEqual([id]);
  }, 30_000);
});
