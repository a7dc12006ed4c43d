// `import <kbId> <file.jsonl>`: a JSON Lines file (one `{ "text": …, "metadata": … }` a line, as the
// server's POST …/contents/import takes) sent in parts of at most --batch lines and --batch-bytes
// bytes, read from the file as it goes (a large file never sits in memory whole), several parts at
// a time, with a progress bar; then, unless --no-wait, a second bar while the server indexes. Each
// part is all or nothing on the server: a bad line stops the import with its line number in the
// file, and the parts acknowledged before it stay imported (their count is printed, so a rerun can
// skip them with --skip-lines).
import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { progressBars } from './progress';
import { type Api, CliError } from './api';

export interface ImportOptions {
  batch: number;
  batchBytes: number;
  concurrency: number;
  wait: boolean;
  skipLines: number;
}

interface Part {
  /** Line number in the file of the part's first line. */
  firstLine: number;
  lines: number;
  body: string;
}

interface Progress {
  contents: { pending: number; processing: number; ready: number; failed: number };
  chunksPerSecond: number;
  etaSeconds: number | null;
}

const format = (seconds: number | null) => (seconds === null ? '?' : seconds >= 90 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds)} s`);

/** The file's lines in parts (blank lines kept: they keep the server's line numbers true to the file). */
async function* parts(file: string, options: ImportOptions): AsyncGenerator<Part> {
  const lines = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  let lineNo = 0;
  let current: string[] = [];
  let bytes = 0;
  let firstLine = options.skipLines + 1;
  const flush = (): Part => {
    const part = { firstLine, lines: current.length, body: `${current.join('\n')}\n` };
    firstLine += current.length;
    current = [];
    bytes = 0;
    return part;
  };
  for await (const line of lines) {
    lineNo++;
    if (lineNo <= options.skipLines) continue;
    const size = Buffer.byteLength(line) + 1;
    if (current.length > 0 && (current.length >= options.batch || bytes + size > options.batchBytes)) yield flush();
    current.push(line);
    bytes += size;
  }
  if (current.some((l) => l.trim() !== '')) yield flush();
}

/** `1–2000, 4001–6000`: the ranges, adjacent ones joined. */
function mergedRanges(ranges: [number, number][]): string {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const r of sorted) {
    const last = out.at(-1);
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else out.push([...r]);
  }
  return out.map(([a, b]) => `${a}–${b}`).join(', ');
}

export async function importFile(api: Api, kbId: string, file: string, options: ImportOptions): Promise<number> {
  let total: number;
  try {
    total = statSync(file).size;
  } catch {
    throw new CliError(`no such file: ${file}`);
  }
  const kbPath = `/api/v1/knowledge-bases/${encodeURIComponent(kbId)}`;
  // A missing knowledge base (or a bad key) is told before anything is sent.
  const before = (await api.call<{ ingestion: Progress }>('GET', kbPath)).data.ingestion;
  const bars = progressBars(' {name} |{bar}| {percentage}% · {items} items · {rate} · eta {eta_text}');
  const started = performance.now();
  const sendBar = bars.create(total, 0, { name: 'import', items: 0, rate: '0 items/s', eta_text: '?' });
  let sentBytes = 0;
  let imported = 0;
  let failure: CliError | undefined;
  /** Line ranges acknowledged. */
  const done: [number, number][] = [];
  const source = parts(file, options);
  const sendOne = async (part: Part) => {
    try {
      const { data } = await api.send<{ count: number }>(`${kbPath}/contents/import`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-ndjson' },
        body: part.body,
      });
      imported += data.count;
      done.push([part.firstLine, part.firstLine + part.lines - 1]);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      // The server numbers the lines of the part; the file's numbers are told instead.
      const inFile = message
        .replace(/\bline (\d+)/g, (_, n: string) => `line ${part.firstLine + Number(n) - 1}`)
        .replace(/\/lines\/(\d+)/g, (_, n: string) => `/lines/${part.firstLine + Number(n) - 1}`);
      failure ??= new CliError(`${inFile}\n(lines ${part.firstLine}–${part.firstLine + part.lines - 1} were not imported)`);
    }
    sentBytes += Buffer.byteLength(part.body);
    const seconds = (performance.now() - started) / 1000;
    const rate = imported / Math.max(seconds, 0.001);
    sendBar.update(Math.min(total, sentBytes), {
      items: imported,
      rate: `${Math.round(rate)} items/s`,
      eta_text: format(((total - sentBytes) / Math.max(sentBytes, 1)) * seconds),
    });
  };
  // Parts are read from the file only as workers take them: at most `concurrency` in memory.
  let ended = false;
  const next = async (): Promise<Part | undefined> => {
    if (ended || failure) return undefined;
    const r = await source.next();
    if (r.done) ended = true;
    return r.done ? undefined : r.value;
  };
  await Promise.all(
    Array.from({ length: Math.max(1, options.concurrency) }, async () => {
      for (let part = await next(); part; part = await next()) await sendOne(part);
    }),
  );
  const sendSeconds = (performance.now() - started) / 1000;

  let after = before;
  if (options.wait && imported > 0 && !failure) {
    const index = bars.create(1, 0, { name: 'index ', items: 0, rate: '0 chunks/s', eta_text: '?' });
    for (;;) {
      after = (await api.call<{ ingestion: Progress }>('GET', kbPath)).data.ingestion;
      const { pending, processing, ready, failed } = after.contents;
      index.setTotal(pending + processing + ready + failed);
      index.update(ready + failed, { items: ready + failed, rate: `${after.chunksPerSecond} chunks/s`, eta_text: format(after.etaSeconds) });
      if (pending + processing === 0) break;
      await Bun.sleep(1000);
    }
  }
  bars.stop();
  console.log(`${imported} items imported in ${sendSeconds.toFixed(1)} s (${Math.round(imported / Math.max(sendSeconds, 0.001))} items/s)`);
  if (failure) {
    console.log(`imported lines: ${mergedRanges(done) || 'none'}`);
    throw failure;
  }
  if (options.wait && imported > 0) {
    const failed = after.contents.failed - before.contents.failed;
    console.log(`indexed in ${((performance.now() - started) / 1000).toFixed(1)} s; ${failed} failed to index`);
    if (failed > 0) return 1;
  }
  return 0;
}
