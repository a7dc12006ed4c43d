// The sentence-transformer that ships with the server: all-MiniLM-L6-v2, int8 ONNX export (22.7 MB,
// Apache-2.0), tracked in the repository under models/Xenova/all-MiniLM-L6-v2/ (see its README.md).
// It serves every knowledge base type unless the configuration names another model, so a fresh
// clone or binary has real semantic search offline with no configuration.
//
// Where its files are:
// - from source: models/ beside src/ (found from this file, whatever the working directory and
//   EMBEDDING_MODEL_DIR are);
// - in the compiled binary (scripts/build.ts): embedded under /$bunfs/root/kb-assets/models/ with
//   a manifest of sizes and SHA-256. ONNX Runtime opens a model file by its path, which the embedded
//   file system is not to native code, so the files are copied once to
//   $TMPDIR/kb-search-<uid>-model-<hash of the manifest>/ and reused by later starts (as Bun does
//   with the embedded addons).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

export const SHIPPED_MODEL_ID = 'Xenova/all-MiniLM-L6-v2';

/** The files of the shipped model, in the Hugging Face layout (int8 only: onnx/model_quantized.onnx). */
export const SHIPPED_MODEL_FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'onnx/model_quantized.onnx'] as const;

/** In the binary: the embedded models folder (<org>/<name>/… and manifest.json), written by scripts/build.ts. */
export const EMBEDDED_MODELS_DIR = '/$bunfs/root/kb-assets/models';
export const EMBEDDED_MANIFEST = 'manifest.json';

export interface ShippedManifest {
  id: string;
  files: { name: string; bytes: number; sha256: string }[];
}

let cached: string | undefined;

/**
 * The folder holding the shipped model as `<dir>/Xenova/all-MiniLM-L6-v2/…` (a model directory in
 * the layout EMBEDDING_MODEL_DIR has): searched after EMBEDDING_MODEL_DIR.
 */
export function shippedModelDir(): string {
  cached ??= Bun.isStandaloneExecutable ? unpackEmbedded() : resolve(import.meta.dir, '..', 'models');
  return cached;
}

/** Copies the embedded model to a folder on disk (once per content), and returns that folder. */
function unpackEmbedded(): string {
  const manifestText = readFileSync(join(EMBEDDED_MODELS_DIR, EMBEDDED_MANIFEST), 'utf8');
  const manifest = JSON.parse(manifestText) as ShippedManifest;
  const hash = createHash('sha256').update(manifestText).digest('hex').slice(0, 16);
  const uid = process.getuid?.() ?? 0;
  const dir = join(tmpdir(), `kb-search-${uid}-model-${hash}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Only a folder of our own that nobody else may write into is trusted with what ONNX Runtime runs.
  const own = statSync(dir);
  if (own.uid !== uid || (own.mode & 0o022) !== 0) {
    throw new Error(
      `${dir} (the shipped embedding model's copy) belongs to another user or is writable by others; remove it or set TMPDIR to a folder of your own`,
    );
  }
  for (const file of manifest.files) {
    const target = join(dir, ...manifest.id.split('/'), file.name);
    if (existsSync(target) && statSync(target).size === file.bytes) continue;
    const bytes = readFileSync(join(EMBEDDED_MODELS_DIR, ...manifest.id.split('/'), file.name));
    if (bytes.length !== file.bytes || createHash('sha256').update(bytes).digest('hex') !== file.sha256) {
      throw new Error(`the embedded model file ${file.name} does not match the binary's manifest (a damaged binary?)`);
    }
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
    // Written aside and renamed: a start that stops half-way, or two starting at once, never leave a short file.
    const part = `${target}.${process.pid}.part`;
    writeFileSync(part, bytes, { mode: 0o600 });
    renameSync(part, target);
  }
  return dir;
}

/** The manifest scripts/build.ts embeds beside the model (sizes and SHA-256 of its files). */
export function shippedManifest(root = resolve(import.meta.dir, '..', 'models')): ShippedManifest {
  return {
    id: SHIPPED_MODEL_ID,
    files: SHIPPED_MODEL_FILES.map((name) => {
      const bytes = readFileSync(join(root, ...SHIPPED_MODEL_ID.split('/'), name));
      return { name, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
    }),
  };
}
