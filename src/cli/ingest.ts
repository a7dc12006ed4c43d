// `ingest <files or folders…> --kb <id>`: uploads every file (folders walked, hidden entries
// skipped) with its path and SHA-256 as metadata, several at a time, with a progress bar while
// uploading and a second while the server indexes. Files whose content is already in the knowledge
// base (same SHA-256) are skipped, so a rerun resumes where an interrupted one stopped.
import { lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { progressBars } from './progress';
import { allPages, type Api, CliError } from './api';

export interface IngestOptions {
  kb: string;
  concurrency: number;
  wait: boolean;
}

interface Progress {
  contents: { pending: number; processing: number; ready: number; failed: number };
  chunksWaiting: number;
  chunksPerSecond: number;
  etaSeconds: number | null;
}

/**
 * Files under the given paths, in a stable order, each with the name it is recorded under: its path
 * from the folder given (that folder's name first), or its own name. Hidden files and folders are left out.
 */
export function collectFiles(paths: string[]): { file: string; name: string }[] {
  const files = new Map<string, string>();
  let root = '';
  const add = (path: string) => files.has(path) || files.set(path, relative(root, path));
  const walk = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) {
      // A linked file is read; a linked folder is not followed (it could loop).
      if (statSync(path).isFile()) add(path);
      return;
    }
    if (stat.isFile()) add(path);
    else if (stat.isDirectory()) {
      for (const name of readdirSync(path).sort()) if (!name.startsWith('.')) walk(join(path, name));
    }
  };
  for (const p of paths) {
    try {
      root = dirname(resolve(p));
      walk(resolve(p));
    } catch {
      throw new CliError(`no such file or folder: ${p}`);
    }
  }
  return [...files].map(([file, name]) => ({ file, name }));
}

/** Extensions the server reads (text formats, PDF, DOCX; images only in TEXT_AND_MEDIA_HIGH_QUALITY). */
const READABLE = new Set(['txt', 'text', 'md', 'markdown', 'mdown', 'mkd', 'mkdn', 'html', 'htm', 'xhtml', 'csv', 'tsv', 'json', 'pdf', 'docx']);
const IMAGES = new Set(['png', 'jpg', 'jpeg', 'webp', 'tif', 'tiff']);

/**
 * Why the server would refuse the file, judged from its name and first bytes before uploading it
 * (undefined: upload it; the server stays the judge). Gzip-compressed files are read by the server.
 */
export function unreadable(name: string, head: Uint8Array, takesImages: boolean): string | undefined {
  const base = basename(name).toLowerCase();
  const ext = base.includes('.') ? base.slice(base.lastIndexOf('.') + 1) : '';
  if (head[0] === 0x1f && head[1] === 0x8b) return undefined;
  if (IMAGES.has(ext)) return takesImages ? undefined : 'an image: only TEXT_AND_MEDIA_HIGH_QUALITY knowledge bases read images (OCR)';
  if (READABLE.has(ext)) return undefined;
  // Any other name: text (source code, README, LICENSE) is read as plain text; binary data is not.
  return head.includes(0) ? `binary data of a type the server does not read${ext ? ` (.${ext})` : ''}` : undefined;
}

const sha256 = (bytes: Uint8Array) => new Bun.CryptoHasher('sha256').update(bytes).digest('hex');
const format = (seconds: number | null) => (seconds === null ? '?' : seconds >= 90 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds)} s`);

export async function ingest(api: Api, paths: string[], options: IngestOptions): Promise<number> {
  const files = collectFiles(paths);
  if (files.length === 0) throw new CliError('no files found in the given paths');
  const kbPath = `/api/v1/knowledge-bases/${encodeURIComponent(options.kb)}`;
  const kb = (await api.call<{ type: string; ingestion: Progress }>('GET', kbPath)).data;
  const before = kb.ingestion;
  const takesImages = kb.type === 'TEXT_AND_MEDIA_HIGH_QUALITY';

  // What the knowledge base already holds, by content hash: those files are skipped.
  const known = new Set<string>();
  for await (const item of allPages<{ metadata: Record<string, unknown> }>(api, `${kbPath}/contents`)) {
    if (typeof item.metadata.sha256 === 'string') known.add(item.metadata.sha256);
  }

  const bars = progressBars(' {name} |{bar}| {value}/{total} {unit} · {rate} · eta {eta_text}');
  const started = performance.now();
  const upload = bars.create(files.length, 0, { name: 'upload', unit: 'files', rate: '0 files/s', eta_text: '?' });
  const uploaded: string[] = [];
  const failures: { file: string; reason: string }[] = [];
  let skipped = 0;
  const notRead: { file: string; reason: string }[] = [];
  let next = 0;
  const uploadOne = async ({ file, name }: { file: string; name: string }) => {
    const bytes = new Uint8Array(readFileSync(file));
    const refusal = unreadable(name, bytes.subarray(0, 8192), takesImages);
    if (refusal) {
      notRead.push({ file: name, reason: refusal });
      return;
    }
    const hash = sha256(bytes);
    if (known.has(hash)) {
      skipped++;
      return;
    }
    known.add(hash); // the same content twice in this run is uploaded once
    try {
      const { data } = await api.upload<{ id: string }>(options.kb, basename(file), bytes, { path: name, sha256: hash });
      uploaded.push(data.id);
    } catch (err) {
      failures.push({ file: name, reason: err instanceof Error ? err.message : String(err) });
    }
  };
  await Promise.all(
    Array.from({ length: Math.max(1, options.concurrency) }, async () => {
      while (next < files.length) {
        await uploadOne(files[next++]!);
        const done = next;
        const seconds = (performance.now() - started) / 1000;
        const rate = done / Math.max(seconds, 0.001);
        upload.update(done, { rate: `${rate.toFixed(1)} files/s`, eta_text: format((files.length - done) / rate) });
      }
    }),
  );

  let after = before;
  if (options.wait && uploaded.length > 0) {
    // This run's items: those settled since it began (the knowledge base's other items are not counted).
    const index = bars.create(uploaded.length, 0, { name: 'index ', unit: 'items', rate: '0 chunks/s', eta_text: '?' });
    const settledBefore = before.contents.ready + before.contents.failed;
    for (;;) {
      after = (await api.call<{ ingestion: Progress }>('GET', kbPath)).data.ingestion;
      const { pending, processing, ready, failed } = after.contents;
      const waiting = after.chunksWaiting > 0 ? ` · ${after.chunksWaiting} chunks to go` : '';
      index.update(Math.max(0, Math.min(uploaded.length, ready + failed - settledBefore)), {
        rate: `${after.chunksPerSecond} chunks/s${waiting}`,
        eta_text: format(after.etaSeconds),
      });
      if (pending + processing === 0) break;
      await Bun.sleep(1000);
    }
  }
  bars.stop();

  const seconds = (performance.now() - started) / 1000;
  console.log(
    `${files.length} files: ${uploaded.length} uploaded, ${skipped} skipped (already in the knowledge base), ${notRead.length} not readable by the server, ${failures.length} failed to upload, in ${seconds.toFixed(1)} s`,
  );
  if (notRead.length > 0) {
    console.log('not uploaded (the server would refuse them):');
    printByReason(notRead);
  }
  let indexFailures = 0;
  if (options.wait && uploaded.length > 0) {
    const mine = new Set(uploaded);
    const failedItems: { id: string; metadata: Record<string, unknown>; error?: string }[] = [];
    if (after.contents.failed > before.contents.failed) {
      for await (const item of allPages<{ id: string; status: string; error?: string; metadata: Record<string, unknown> }>(api, `${kbPath}/contents`)) {
        if (mine.has(item.id) && item.status === 'failed') failedItems.push(item);
      }
    }
    indexFailures = failedItems.length;
    console.log(`indexed: ${uploaded.length - indexFailures} ready, ${indexFailures} failed`);
    for (const item of failedItems) failures.push({ file: String(item.metadata.path ?? item.id), reason: `indexing failed: ${item.error ?? 'unknown error'}` });
  }
  if (failures.length > 0) {
    console.log('failures:');
    printByReason(failures);
  }
  return failures.length > 0 ? 1 : 0;
}

/** One entry per reason, with how many files and the first few of them. */
function printByReason(list: { file: string; reason: string }[]): void {
  const byReason = new Map<string, string[]>();
  for (const { file, reason } of list) {
    const files = byReason.get(reason) ?? [];
    files.push(file);
    byReason.set(reason, files);
  }
  for (const [reason, files] of byReason) {
    const shown = files.slice(0, 3).join(', ') + (files.length > 3 ? `, … (${files.length - 3} more)` : '');
    console.log(`  ${files.length === 1 ? '1 file' : `${files.length} files`}: ${reason.replaceAll('\n', '\n    ')}\n    ${shown}`);
  }
}
