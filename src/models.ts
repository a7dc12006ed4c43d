// Embedding models on demand (same as `kb-search models …` in the binary):
//
//   bun run models pull <org/name> [--dtype fp32|int8|all] [--revision main]
//   bun run models list
//
// Downloads go into EMBEDDING_MODEL_DIR (default ./models) from EMBEDDING_HUB_URL (default the
// Hugging Face hub), with a progress bar; an interrupted pull resumes when run again. `list` shows
// them, the model shipped with the server and USE-Lite, each with the types it serves now.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { listModels, locateModel, ModelPullError, pullModel, type InstalledModel, type ModelDtype, type PullProgress } from '../engine';
import { loadConfig } from './config';
import { KB_TYPES, modelDirs, typeEmbeddings } from './kb-types';
import { SHIPPED_MODEL_ID, shippedModelDir } from './shipped-model';
import { commandFor } from './invocation';

const MODELS = commandFor('models');
const USAGE = `usage:
  ${MODELS} pull <org/name> [--dtype fp32|int8|all] [--revision <rev>]
  ${MODELS} list
(EMBEDDING_MODEL_DIR: where models are kept, default ./models;
 EMBEDDING_HUB_URL: where they come from, default https://huggingface.co)`;

function fail(message: string, code = 2): never {
  console.error(`error: ${message}${code === 2 ? `\n\n${USAGE}` : ''}`);
  process.exit(code);
}

const MB = (n: number) => `${(n / 1e6).toFixed(1)} MB`;

/** One progress line per file: redrawn in place on a terminal, every 10% otherwise. */
function progressPrinter(): (p: PullProgress) => void {
  const tty = process.stderr.isTTY === true;
  let file = '';
  let started = 0;
  let lastTenth = -1;
  return (p) => {
    if (p.file !== file) {
      file = p.file;
      started = performance.now();
      lastTenth = -1;
      if (p.resumedFrom > 0) process.stderr.write(`${p.file}: resuming at ${MB(p.resumedFrom)}\n`);
    }
    const fraction = p.total ? p.received / p.total : 0;
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? (p.received - p.resumedFrom) / seconds : 0;
    const eta = p.total && rate > 0 ? Math.ceil((p.total - p.received) / rate) : undefined;
    const width = 24;
    const bar = '#'.repeat(Math.round(fraction * width)).padEnd(width, '-');
    const line = `[${bar}] ${p.total ? `${Math.floor(fraction * 100)}%`.padStart(4) : '   ?'} ${MB(p.received)}${p.total ? `/${MB(p.total)}` : ''} ${MB(rate)}/s${eta !== undefined ? ` eta ${eta} s` : ''}  ${p.file}`;
    if (tty) {
      process.stderr.write(`\r${line}\u001b[K${p.total && p.received >= p.total ? '\n' : ''}`);
    } else {
      const tenth = Math.floor(fraction * 10);
      if (tenth !== lastTenth) {
        lastTenth = tenth;
        process.stderr.write(`${line}\n`);
      }
    }
  };
}

const { values, positionals } = parseArgs({
  // `kb-search models …` (binary) passes the word models first; `bun run models …` does not.
  args: Bun.argv.slice(Bun.argv[2] === 'models' ? 3 : 2),
  options: { dtype: { type: 'string', default: 'all' }, revision: { type: 'string', default: 'main' }, help: { type: 'boolean', short: 'h' } },
  allowPositionals: true,
  strict: false,
});
if (values.help || positionals.length === 0) {
  console.log(USAGE);
  process.exit(values.help ? 0 : 2);
}
const config = loadConfig();
const { modelDir, hubUrl } = config.embedding;

if (positionals[0] === 'pull') {
  const id = positionals[1];
  if (!id || positionals.length > 2) fail('pull takes one model id, e.g. Xenova/all-MiniLM-L6-v2');
  const dtype = String(values.dtype);
  if (!['fp32', 'int8', 'all'].includes(dtype)) fail(`--dtype must be fp32, int8 or all (got ${dtype})`);
  const dtypes: ModelDtype[] = dtype === 'all' ? ['fp32', 'int8'] : [dtype as ModelDtype];
  try {
    const started = performance.now();
    const { dir, files } = await pullModel(id, { modelDir, hubUrl, revision: String(values.revision), dtypes, onProgress: progressPrinter() });
    const fetched = files.filter((f) => !f.present);
    console.log(
      `${id} → ${dir}: ${files.length} files, ${MB(files.reduce((n, f) => n + f.bytes, 0))} (${fetched.length} downloaded in ${((performance.now() - started) / 1000).toFixed(1)} s, ${files.length - fetched.length} already present)`,
    );
  } catch (err) {
    fail(err instanceof ModelPullError ? err.message : `pull failed: ${err instanceof Error ? err.message : String(err)}`, 1);
  }
} else if (positionals[0] === 'list') {
  const shippedDir = shippedModelDir();
  const shippedRoot = (m: InstalledModel) => m.id === SHIPPED_MODEL_ID && resolve(m.dir) === resolve(shippedDir, SHIPPED_MODEL_ID);
  // EMBEDDING_MODEL_DIR's models, then the shipped one (unless EMBEDDING_MODEL_DIR is its folder: ./models of a checkout).
  const models = listModels(modelDir);
  if (!models.some(shippedRoot)) models.push(...listModels(shippedDir).filter(shippedRoot));
  // Which knowledge base types the server would serve with each (its settings resolved now): a
  // transformers model by the folder its files load from, the others by name.
  const usedBy = new Map<string, string[]>();
  const use = (key: string, type: string) => usedBy.set(key, [...(usedBy.get(key) ?? []), type]);
  try {
    const embeddings = typeEmbeddings(config);
    for (const type of KB_TYPES) {
      const e = embeddings[type];
      const found = e.provider === 'transformers' ? locateModel(modelDirs(config, e.model), e.model, e.precision) : undefined;
      use(found ? `${resolve(found.root)}@${found.precision}` : e.provider === 'transformers' ? `missing:${e.model}` : e.model, type);
    }
  } catch (err) {
    console.error(`(cannot tell which types use the models: ${err instanceof Error ? err.message : String(err)})`);
  }
  if (!listModels(modelDir).length)
    console.log(`no models in ${modelDir} (EMBEDDING_MODEL_DIR); a better one than the shipped model: ${MODELS} pull Xenova/bge-small-en-v1.5`);
  for (const m of models) {
    // "used by" names the export (fp32 or int8) where a folder holds both.
    const users = m.dtypes.flatMap((d) => (usedBy.get(`${resolve(m.dir)}@${d}`) ?? []).map((t) => (m.dtypes.length > 1 ? `${t} (${d})` : t)));
    const note = shippedRoot(m) ? '  (shipped with the server)' : '';
    console.log(
      `${m.id.padEnd(36)} ${MB(m.bytes).padStart(9)}  ${m.dtypes.join('+') || 'no weights'}  used by: ${users.join(', ') || 'no type'}${note}${m.missing.length ? `  (incomplete: missing ${m.missing.join(', ')})` : ''}`,
    );
  }
  console.log(
    `${'universal-sentence-encoder-lite'.padEnd(36)} ${'built in'.padStart(9)}  used by: ${usedBy.get('universal-sentence-encoder-lite')?.join(', ') || 'no type (HIGH_QUALITY_MODEL or COST_EFFECTIVE_MODEL=use-lite)'}`,
  );
  // Configured but not found (the server would fail to load it), and models behind EMBEDDING_HTTP_URL.
  for (const [key, types] of usedBy) {
    if (key === 'universal-sentence-encoder-lite' || key.startsWith('/')) continue;
    const missing = key.startsWith('missing:');
    console.log(`${key.replace(/^missing:/, '').padEnd(36)} ${(missing ? 'not found' : 'http').padStart(9)}  used by: ${types.join(', ')}`);
  }
} else {
  fail(`unknown command "${positionals[0]}"`);
}
