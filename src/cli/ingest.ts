// `ingest <files or folders…> --kb <id>`: uploads every file (folders walked, hidden entries
// skipped) with its path and SHA-256 as metadata, several at a time, with a progress bar while
// uploading and a second while the server indexes. Files whose content is already in the knowledge
// base (same SHA-256) are skipped, so a rerun resumes where an interrupted one stopped.
import { lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import cliProgress from 'cli-progress';
import { allPages, type Api, CliError } from './api';

export interface IngestOptions {
  kb: string;
  concurrency: number;
  wait: boolean;
}

interface Progress {
  contents: { pending: number; processing: number; ready: number; failed: number };
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

const sha256 = (bytes: Uint8Array) => new Bun.CryptoHasher('sha256').update(bytes).digest('hex');
const format = (seconds: number | null) => (seconds === null ? '?' : seconds >= 90 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds)} s`);

export async function ingest(api: Api, paths: string[], options: IngestOptions): Promise<number> {
  const files = collectFiles(paths);
  if (files.length === 0) throw new CliError('no files found in the given paths');
  const kbPath = `/api/v1/knowledge-bases/${encodeURIComponent(options.kb)}`;
  const before = (await api.call<{ ingestion: Progress }>('GET', kbPath)).data.ingestion;

  // What the knowledge base already holds, by content hash: those files are skipped.
  const known = new Set<string>();
  for await (const item of allPages<{ metadata: Record<string, unknown> }>(api, `${kbPath}/contents`)) {
    if (typeof item.metadata.sha256 === 'string') known.add(item.metadata.sha256);
  }

  const bars = new cliProgress.MultiBar(
    {
      format: ' {name} |{bar}| {value}/{total} {unit} · {rate} · eta {eta_text}',
      hideCursor: true,
      noTTYOutput: true,
      notTTYSchedule: 2000,
      stopOnComplete: false,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = performance.now();
  const upload = bars.create(files.length, 0, { name: 'upload', unit: 'files', rate: '0 files/s', eta_text: '?' });
  const uploaded: string[] = [];
  const failures: { file: string; reason: string }[] = [];
  let skipped = 0;
  let next = 0;
  const uploadOne = async ({ file, name }: { file: string; name: string }) => {
    const bytes = new Uint8Array(readFileSync(file));
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
    const index = bars.create(1, 0, { name: 'index ', unit: 'items', rate: '0 chunks/s', eta_text: '?' });
    for (;;) {
      after = (await api.call<{ ingestion: Progress }>('GET', kbPath)).data.ingestion;
      const { pending, processing, ready, failed } = after.contents;
      const total = pending + processing + ready + failed;
      index.setTotal(total);
      index.update(ready + failed, { rate: `${after.chunksPerSecond} chunks/s`, eta_text: format(after.etaSeconds) });
      if (pending + processing === 0) break;
      await Bun.sleep(1000);
    }
  }
  bars.stop();

  const seconds = (performance.now() - started) / 1000;
  console.log(
    `${files.length} files: ${uploaded.length} uploaded, ${skipped} skipped (already in the knowledge base), ${failures.length} failed to upload, in ${seconds.toFixed(1)} s`,
  );
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
    for (const f of failures) console.log(`  ${f.file}: ${f.reason.replaceAll('\n', '\n    ')}`);
  }
  return failures.length > 0 ? 1 : 0;
}
