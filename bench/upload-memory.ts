// Server memory under concurrent large uploads: starts the real server (src/main.ts) on a
// temporary data directory, sends N uploads of one generated S-MB text file at once (streamed
// from disk: Bun.file as the multipart part), and samples the server's resident memory
// (/proc/<pid>/status VmRSS) every 50 ms before, during and after.
//
//   bun bench/upload-memory.ts [--files 10] [--mb 40] [--variant capped|accepted|both]
//                              [--settle 300] [--fake-embeddings] [--env KEY=VALUE ...]
//
// Variants (each on a fresh server):
//   capped    default limits: MAX_FILE_BYTES 50 MiB lets each file in, MAX_TEXT_BYTES 10 MiB
//             refuses its 40 MB of text after extraction → 413 PAYLOAD_TOO_LARGE for all.
//   accepted  MAX_TEXT_BYTES=64MiB: the text is accepted, stored, chunked and indexed.
// `--settle` bounds how long the accepted variant waits for the items to become ready/failed.
// `--fake-embeddings` serves embeddings from a local stub (OpenAI-style /embeddings, 8 dims), so the
// run measures upload, extraction and indexing rather than the CPU model's throughput.
import { parseArgs } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashEmbed, startHashEmbedder } from './lib/hash-embed';
import { procStatusBytes } from './lib/memory';
import { metricSum, tryScrapeMetrics } from './lib/metrics';
import { launchServer, waitFor, type Server } from './lib/server';
import { median } from './lib/stats';
import { Xorshift32 } from './lib/words';

const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    files: { type: 'string', default: '10' },
    mb: { type: 'string', default: '40' },
    variant: { type: 'string', default: 'both' },
    settle: { type: 'string', default: '300' },
    'fake-embeddings': { type: 'boolean', default: false },
    env: { type: 'string', multiple: true, default: [] },
  },
});
const FILES = Number(args.files);
const SIZE = Number(args.mb) * 1_000_000;
const SETTLE_MS = Number(args.settle) * 1000;
const ORG = 'org_bench';
const KEY = 'bench-key-0123456789';
const H = { 'x-service-organization-id': ORG, 'x-service-api-key': KEY };
const MiB = 1024 * 1024;

// --- the input file: words and paragraphs, deterministic ------------------------------------

async function writeTextFile(path: string, bytes: number): Promise<void> {
  const random = new Xorshift32();
  const fh = await open(path, 'w');
  let written = 0;
  let block = '';
  while (written < bytes) {
    let para = '';
    const sentences = 3 + (random.state & 3);
    for (let s = 0; s < sentences; s++) {
      const words: string[] = [];
      for (let w = 0; w < 12; w++) words.push(random.word());
      para += `${words.join(' ')}. `;
    }
    block += `${para.trim()}\n\n`;
    if (block.length > 1 << 20) {
      const chunk = block.slice(0, Math.min(block.length, bytes - written));
      await fh.write(chunk);
      written += chunk.length;
      block = '';
    }
  }
  await fh.close();
}

// --- the server -------------------------------------------------------------------------------

interface UploadServer {
  server: Server;
  url: string;
  dataDir: string;
}

async function startServer(env: Record<string, string>): Promise<UploadServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'kb-upload-bench-'));
  const server = await launchServer({ env: { DATA_DIR: dataDir, KB_API_KEYS: `${ORG}:${KEY}`, ...env }, keep: 2000 });
  await waitFor(server, '/ready', { intervalMs: 50, timeoutMs: 60_000 });
  return { server, url: server.base, dataDir };
}

async function stopServer(s: UploadServer): Promise<void> {
  await s.server.stop(15_000);
  rmSync(s.dataDir, { recursive: true, force: true });
}

// --- memory sampling --------------------------------------------------------------------------

/** Resident set, bytes; undefined once the process is gone. */
const rssBytes = (pid: number) => procStatusBytes(pid, 'VmRSS');

class Sampler {
  readonly samples: { t: number; rss: number; phase: string }[] = [];
  phase = 'before';
  private timer?: ReturnType<typeof setInterval>;
  constructor(private readonly pid: number) {}
  start(): void {
    const t0 = performance.now();
    this.timer = setInterval(() => {
      const rss = rssBytes(this.pid);
      if (rss !== undefined) this.samples.push({ t: performance.now() - t0, rss, phase: this.phase });
    }, 50);
  }
  stop(): void {
    clearInterval(this.timer);
  }
  of(phase: string): number[] {
    return this.samples.filter((s) => s.phase === phase).map((s) => s.rss);
  }
}

const mb = (b: number | undefined) => (b === undefined ? '-' : `${(b / MiB).toFixed(0)} MiB`);
const max = (xs: number[]) => (xs.length ? Math.max(...xs) : undefined);

/** Chunks embedded so far (the server's kb_chunks_embedded_total counter), for progress lines. */
async function embeddedChunks(url: string): Promise<number | undefined> {
  const m = await tryScrapeMetrics(url);
  return m && metricSum(m, 'kb_chunks_embedded_total');
}

/** Content items by status (the server's kb_contents gauge); undefined when the server is gone. */
async function contentStates(url: string): Promise<Record<string, number> | undefined> {
  const m = await tryScrapeMetrics(url);
  if (!m) return undefined;
  const out: Record<string, number> = {};
  for (const [key, value] of m) {
    const status = /^kb_contents\{status="(\w+)"\}$/.exec(key)?.[1];
    if (status) out[status] = value;
  }
  return out;
}

// --- one run ----------------------------------------------------------------------------------

interface RunResult {
  variant: string;
  env: Record<string, string>;
  rssBefore?: number;
  peakUpload?: number;
  peakAfter?: number;
  rssEnd?: number;
  ackSeconds: number;
  statuses: Record<string, number>;
  ended: Record<string, number>;
  settleSeconds?: number;
  serverAlive: boolean;
}

async function run(variant: string, file: string, env: Record<string, string>): Promise<RunResult> {
  const server = await startServer(env);
  const pid = server.server.pid;
  const sampler = new Sampler(pid);
  sampler.start();
  try {
    const kbRes = await fetch(`${server.url}/api/v1/knowledge-bases`, {
      method: 'POST',
      headers: { ...H, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `upload bench ${variant}`, type: 'TEXT_HIGH_QUALITY' }),
    });
    const kb = ((await kbRes.json()) as { data: { id: string } }).data.id;
    await Bun.sleep(1000); // baseline samples

    sampler.phase = 'upload';
    const t0 = performance.now();
    const responses = await Promise.all(
      Array.from({ length: FILES }, async (_, i) => {
        const form = new FormData();
        form.append('file', Bun.file(file), `big-${i}.txt`);
        try {
          const res = await fetch(`${server.url}/api/v1/knowledge-bases/${kb}/contents/file`, { method: 'POST', headers: H, body: form });
          const body = ((await res.json().catch(() => null)) ?? { error: { code: '(empty body)' } }) as { data?: { id: string }; error?: { code: string } };
          return { status: res.status, code: body.error?.code, id: body.data?.id };
        } catch (err) {
          return { status: 0, code: `client error: ${(err as Error).message}`, id: undefined };
        }
      }),
    );
    const ackSeconds = (performance.now() - t0) / 1000;
    const statuses: Record<string, number> = {};
    for (const r of responses) {
      const key = `${r.status}${r.code ? ` ${r.code}` : ''}`;
      statuses[key] = (statuses[key] ?? 0) + 1;
    }

    // After: wait until every accepted item is ready or failed (bounded), then a little longer.
    sampler.phase = 'after';
    // Statuses come from /metrics (kb_contents{status=…}): reading the items themselves would
    // serialize their 40 MB texts on every poll and load the server's main thread.
    const accepted = responses.filter((r) => r.id).length;
    const ended: Record<string, number> = {};
    const t1 = performance.now();
    let settleSeconds: number | undefined;
    let lastReport = 0;
    while (accepted > 0) {
      const states = await contentStates(server.url);
      const done = states === undefined || (states.ready ?? 0) + (states.failed ?? 0) >= accepted;
      const elapsed = performance.now() - t1;
      if (elapsed - lastReport > 15_000) {
        lastReport = elapsed;
        console.error(
          `  [${variant}] ${(elapsed / 1000).toFixed(0)} s after the acks: ${JSON.stringify(states ?? 'server gone')}, ${await embeddedChunks(server.url)} chunks embedded, RSS ${mb(rssBytes(pid))}`,
        );
      }
      if (done || elapsed > SETTLE_MS) {
        for (const [s, n] of Object.entries(states ?? { 'server gone': accepted })) if (n > 0) ended[s] = n;
        if (done && states) settleSeconds = elapsed / 1000;
        break;
      }
      await Bun.sleep(500);
    }
    await Bun.sleep(2000);
    sampler.stop();
    const serverAlive = await fetch(`${server.url}/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    return {
      variant,
      env,
      rssBefore: median(sampler.of('before')),
      peakUpload: max(sampler.of('upload')),
      peakAfter: max(sampler.of('after')),
      rssEnd: sampler.samples.at(-1)?.rss,
      ackSeconds,
      statuses,
      ended,
      settleSeconds,
      serverAlive,
    };
  } finally {
    sampler.stop();
    await stopServer(server);
  }
}

// --- main -------------------------------------------------------------------------------------

const work = mkdtempSync(join(tmpdir(), 'kb-upload-input-'));
const file = join(work, 'big.txt');
let t = performance.now();
await writeTextFile(file, SIZE);
console.error(`input: ${file}, ${(Bun.file(file).size / 1e6).toFixed(1)} MB, written in ${((performance.now() - t) / 1000).toFixed(1)} s`);

// Any vectors do: the run measures upload, extraction and indexing, not a model.
const fake = args['fake-embeddings'] ? startHashEmbedder((text) => hashEmbed(text, 8)) : undefined;
const extraEnv = Object.fromEntries((args.env ?? []).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
const embedEnv: Record<string, string> = {
  ...(fake ? { HIGH_QUALITY_MODEL: 'http:bench-stub', EMBEDDING_HTTP_URL: fake.url, EMBEDDING_HTTP_DIMENSIONS: '8' } : {}),
  ...extraEnv,
};

const variants: Array<[string, Record<string, string>]> = [];
if (args.variant === 'capped' || args.variant === 'both') variants.push(['capped (MAX_TEXT_BYTES 10 MiB default)', { ...embedEnv }]);
if (args.variant === 'accepted' || args.variant === 'both')
  variants.push(['accepted (MAX_TEXT_BYTES=64MiB)', { ...embedEnv, MAX_TEXT_BYTES: String(64 * MiB) }]);

const results: RunResult[] = [];
try {
  for (const [name, env] of variants) {
    console.error(`running: ${name} — ${FILES} × ${(SIZE / 1e6).toFixed(0)} MB at once`);
    t = performance.now();
    results.push(await run(name, file, env));
    console.error(`  done in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
} finally {
  fake?.stop();
  rmSync(work, { recursive: true, force: true });
}

console.log(
  `\n${FILES} concurrent uploads of a ${(SIZE / 1e6).toFixed(0)} MB .txt (Bun.file, multipart), server RSS sampled every 50 ms` +
    (fake ? ' (stub embeddings, 8 dims)' : ' (default embedding model)'),
);
const rows = [
  ['variant', 'RSS before', 'peak (uploads)', 'peak (after)', 'RSS end', 'all acked', 'responses', 'ended', 'settled'],
  ...results.map((r) => [
    r.variant,
    mb(r.rssBefore),
    mb(r.peakUpload),
    mb(r.peakAfter),
    mb(r.rssEnd),
    `${r.ackSeconds.toFixed(2)} s`,
    Object.entries(r.statuses)
      .map(([k, v]) => `${v}× ${k}`)
      .join(', '),
    Object.keys(r.ended).length
      ? Object.entries(r.ended)
          .map(([k, v]) => `${v} ${k}`)
          .join(', ')
      : '-',
    r.settleSeconds !== undefined ? `${r.settleSeconds.toFixed(1)} s` : Object.keys(r.ended).length ? `not within ${SETTLE_MS / 1000} s` : '-',
  ]),
];
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
for (const [i, row] of rows.entries()) {
  console.log(row.map((c, j) => c.padEnd(widths[j]!)).join(' | '));
  if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
}
if (Object.keys(extraEnv).length) console.log(`extra server env: ${JSON.stringify(extraEnv)}`);
for (const r of results) if (!r.serverAlive) console.log(`!! the server was not answering /health at the end of "${r.variant}"`);
