// Models on demand: download a sentence-transformer from the Hugging Face hub (or a mirror in its
// URL layout, `<hub>/<id>/resolve/<revision>/<file>`) into a model directory in the layout the
// transformers provider reads (<modelDir>/<org>/<name>/…). Each file goes to `<file>.part` first
// and is renamed once complete and checked, so an interrupted pull resumes where it stopped (an
// HTTP Range request) and a half-written file is never taken for a model.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { sha256File } from '../files/hash';

export const DEFAULT_HUB_URL = 'https://huggingface.co';

export type ModelDtype = 'fp32' | 'int8';

/** The ONNX export of each weight type. */
export const ONNX_FILE: Record<ModelDtype, string> = { fp32: 'onnx/model.onnx', int8: 'onnx/model_quantized.onnx' };

/** The files a model needs, by weight type (the transformers provider's layout). */
export function modelFileList(dtypes: readonly ModelDtype[]): { name: string; optional?: boolean }[] {
  return [
    { name: 'config.json' },
    { name: 'tokenizer.json' },
    { name: 'tokenizer_config.json' },
    { name: 'special_tokens_map.json', optional: true },
    ...dtypes.map((d) => ({ name: ONNX_FILE[d] })),
  ];
}

export interface PullProgress {
  file: string;
  received: number;
  /** Undefined while the size is unknown. */
  total?: number;
  /** Bytes that were already on disk from an earlier, interrupted pull. */
  resumedFrom: number;
}

export interface PullOptions {
  modelDir: string;
  hubUrl?: string;
  revision?: string;
  dtypes?: readonly ModelDtype[];
  onProgress?: (progress: PullProgress) => void;
  /** How long to wait for the hub to answer at all (default 15 s): offline fails fast. */
  connectTimeoutMs?: number;
}

export interface PulledFile {
  name: string;
  bytes: number;
  /** Already complete on disk: not downloaded again. */
  present: boolean;
  sha256?: string;
}

/** A pull that cannot go on; the message says what to do (it names the folder to fill by hand). */
export class ModelPullError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelPullError';
  }
}

const MODEL_ID = /^[\w.-]+\/[\w.-]+$/;

export function modelPath(modelDir: string, id: string): string {
  if (!MODEL_ID.test(id) || id.includes('..')) throw new ModelPullError(`"${id}" is not a model id of the form <org>/<name>`);
  return join(modelDir, ...id.split('/'));
}

/** The files of `dtypes` a model still lacks in `modelDir` (none: it loads without the hub). */
export function missingModelFiles(modelDir: string, id: string, dtypes: readonly ModelDtype[]): string[] {
  const dir = modelPath(modelDir, id);
  return modelFileList(dtypes)
    .filter((f) => !f.optional && !existsSync(join(dir, f.name)))
    .map((f) => f.name);
}

/**
 * The first of `dirs` (model directories, searched in order) holding every file model `id` needs
 * at `precision`; without one (knowledge bases that recorded none), fp32 or else int8 within a
 * folder. Undefined when no folder holds the model.
 */
export function locateModel(dirs: readonly string[], id: string, precision?: ModelDtype): { dir: string; root: string; precision: ModelDtype } | undefined {
  for (const dir of dirs) {
    const root = join(dir, id);
    if (modelFileList([]).some((f) => !f.optional && !existsSync(join(root, f.name)))) continue;
    const found = (precision ? [precision] : (['fp32', 'int8'] as const)).find((p) => existsSync(join(root, ONNX_FILE[p])));
    if (found) return { dir, root, precision: found };
  }
  return undefined;
}

function byHand(target: string, files: readonly { name: string; optional?: boolean }[]): string {
  return `To install the model without network, copy its files into ${target}/ (${files
    .filter((f) => !f.optional)
    .map((f) => f.name)
    .join(', ')}).`;
}

/** What the hub says about a file before it is fetched: its size and, for large files, its SHA-256. */
async function describe(url: string, timeoutMs: number): Promise<{ status: number; size?: number; sha256?: string }> {
  // Large files redirect to a CDN; the hub's own answer carries the checksum (X-Linked-Etag).
  const res = await fetch(url, { method: 'HEAD', redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
  const size = Number(res.headers.get('x-linked-size') ?? res.headers.get('content-length') ?? NaN);
  const etag = (res.headers.get('x-linked-etag') ?? '').replaceAll('"', '');
  return { status: res.status, size: Number.isFinite(size) ? size : undefined, sha256: /^[0-9a-f]{64}$/.test(etag) ? etag : undefined };
}

async function download(
  url: string,
  part: string,
  timeoutMs: number,
  onBytes: (received: number, total: number | undefined, resumedFrom: number) => void,
): Promise<void> {
  const have = existsSync(part) ? statSync(part).size : 0;
  const res = await fetch(url, { headers: have > 0 ? { range: `bytes=${have}-` } : {}, signal: AbortSignal.timeout(timeoutMs) }).catch((err) => {
    throw new Error(`the download stopped: ${err instanceof Error ? err.message : String(err)}`);
  });
  if (res.status === 416) return; // the part file already holds every byte
  if (!res.ok || !res.body) throw new Error(`the hub answered ${res.status} ${res.statusText}`);
  // 206: the server continues where the part file stops; 200: it sends the whole file again.
  const from = res.status === 206 ? have : 0;
  const length = Number(res.headers.get('content-length') ?? NaN);
  const total = Number.isFinite(length) ? from + length : undefined;
  const fh = await open(part, from > 0 ? 'a' : 'w');
  let received = from;
  try {
    onBytes(received, total, from);
    for await (const chunk of res.body) {
      await fh.write(chunk);
      received += chunk.length;
      onBytes(received, total, from);
    }
    await fh.datasync();
  } finally {
    await fh.close();
  }
}

/**
 * Download model `id` into `<modelDir>/<org>/<name>/`. Files already complete are kept; a file
 * interrupted earlier resumes. Every file is checked (size, SHA-256 where the hub gives it, JSON
 * that parses) before it takes its final name.
 */
export async function pullModel(id: string, options: PullOptions): Promise<{ dir: string; files: PulledFile[] }> {
  const dir = modelPath(options.modelDir, id);
  const hub = (options.hubUrl ?? DEFAULT_HUB_URL).replace(/\/+$/, '');
  const revision = options.revision ?? 'main';
  const timeoutMs = options.connectTimeoutMs ?? 15_000;
  const files = modelFileList(options.dtypes ?? ['fp32', 'int8']);
  const out: PulledFile[] = [];
  for (const file of files) {
    const target = join(dir, file.name);
    const url = `${hub}/${id}/resolve/${encodeURIComponent(revision)}/${file.name}`;
    let info: Awaited<ReturnType<typeof describe>>;
    try {
      info = await describe(url, timeoutMs);
    } catch (err) {
      const why =
        err instanceof Error && err.name === 'TimeoutError' ? `no answer within ${timeoutMs / 1000} s` : err instanceof Error ? err.message : String(err);
      throw new ModelPullError(`Cannot reach the model hub at ${hub} (${why}). ${byHand(dir, files)}`);
    }
    if (info.status === 404 || info.status === 401) {
      if (file.optional) continue;
      throw new ModelPullError(
        `${id} has no ${file.name} at ${hub} (${info.status}): is the id right, and is it a model exported to ONNX (as the Xenova/… models are)? ${byHand(dir, files)}`,
      );
    }
    if (info.status >= 400) throw new ModelPullError(`The model hub answered ${info.status} for ${file.name}. ${byHand(dir, files)}`);
    if (existsSync(target) && (info.size === undefined || statSync(target).size === info.size)) {
      out.push({ name: file.name, bytes: statSync(target).size, present: true });
      continue;
    }
    await mkdir(dirname(target), { recursive: true });
    const part = `${target}.part`;
    try {
      await download(url, part, Math.max(timeoutMs, 60_000), (received, total, resumedFrom) =>
        options.onProgress?.({ file: file.name, received, total: total ?? info.size, resumedFrom }),
      );
    } catch (err) {
      throw new ModelPullError(`${file.name}: ${err instanceof Error ? err.message : String(err)}. Run the same command again to resume.`);
    }
    const bytes = statSync(part).size;
    if (info.size !== undefined && bytes !== info.size) {
      if (bytes > info.size) await rm(part, { force: true });
      throw new ModelPullError(`${file.name}: received ${bytes} bytes of ${info.size}. Run the same command again to resume.`);
    }
    const sha256 = info.sha256 ? await sha256File(part) : undefined;
    if (info.sha256 && sha256 !== info.sha256) {
      await rm(part, { force: true });
      throw new ModelPullError(`${file.name}: the download does not match its SHA-256 (${info.sha256}); it was removed. Run the same command again.`);
    }
    if (file.name.endsWith('.json')) {
      try {
        JSON.parse(await Bun.file(part).text());
      } catch {
        await rm(part, { force: true });
        throw new ModelPullError(`${file.name}: the download is not valid JSON; it was removed. Run the same command again.`);
      }
    }
    await rename(part, target);
    out.push({ name: file.name, bytes, present: false, sha256 });
  }
  return { dir, files: out };
}

export interface InstalledModel {
  id: string;
  dir: string;
  bytes: number;
  dtypes: ModelDtype[];
  /** Required files that are missing (the model cannot load until they are there). */
  missing: string[];
}

/** Models under `modelDir` (<org>/<name> folders holding a config.json or ONNX weights). */
export function listModels(modelDir: string): InstalledModel[] {
  const out: InstalledModel[] = [];
  const folders = (dir: string) =>
    existsSync(dir)
      ? readdirSync(dir, { withFileTypes: true })
          .filter((e) => e.isDirectory())
          .map((e) => e.name)
      : [];
  const ids: string[] = [];
  for (const org of folders(modelDir)) {
    for (const name of folders(join(modelDir, org))) {
      const dir = join(modelDir, org, name);
      if (['config.json', 'onnx/model.onnx', 'onnx/model_quantized.onnx'].some((f) => existsSync(join(dir, f)))) ids.push(`${org}/${name}`);
    }
  }
  for (const id of ids.sort()) {
    const dir = join(modelDir, ...id.split('/'));
    let bytes = 0;
    for (const f of new Bun.Glob('**/*').scanSync({ cwd: dir, onlyFiles: true })) if (!f.endsWith('.part')) bytes += statSync(join(dir, f)).size;
    const dtypes: ModelDtype[] = [];
    if (existsSync(join(dir, 'onnx/model.onnx'))) dtypes.push('fp32');
    if (existsSync(join(dir, 'onnx/model_quantized.onnx'))) dtypes.push('int8');
    const missing = modelFileList([])
      .filter((f) => !f.optional && !existsSync(join(dir, f.name)))
      .map((f) => f.name);
    if (dtypes.length === 0) missing.push('onnx/model.onnx or onnx/model_quantized.onnx');
    out.push({ id, dir, bytes, dtypes, missing });
  }
  return out;
}
