// Embedding models on demand (same as `kb-search models …` in the binary):
//
//   bun run models pull <org/name> [--dtype fp32|int8|all] [--revision main]
//   bun run models list
//
// Downloads go into EMBEDDING_MODEL_DIR (default ./models) from EMBEDDING_HUB_URL (default the
// Hugging Face hub), with a progress bar; an interrupted pull resumes when run again.
import { parseArgs } from 'node:util';
import { listModels, ModelPullError, pullModel, type ModelDtype, type PullProgress } from '../engine';
import { loadConfig } from './config';
import { KB_TYPES, typeEmbeddings } from './kb-types';

const USAGE = `usage:
  bun run models pull <org/name> [--dtype fp32|int8|all] [--revision <rev>]
  bun run models list
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
    console.log(`${id} → ${dir}: ${files.length} files, ${MB(files.reduce((n, f) => n + f.bytes, 0))} (${fetched.length} downloaded in ${((performance.now() - started) / 1000).toFixed(1)} s, ${files.length - fetched.length} already present)`);
  } catch (err) {
    fail(err instanceof ModelPullError ? err.message : `pull failed: ${err instanceof Error ? err.message : String(err)}`, 1);
  }
} else if (positionals[0] === 'list') {
  const models = listModels(modelDir);
  // Which knowledge base types the server would serve with each model (its settings resolved now).
  const usedBy = new Map<string, string[]>();
  try {
    const embeddings = typeEmbeddings(config);
    for (const type of KB_TYPES) usedBy.set(embeddings[type].model, [...(usedBy.get(embeddings[type].model) ?? []), type]);
  } catch (err) {
    console.error(`(cannot tell which types use the models: ${err instanceof Error ? err.message : String(err)})`);
  }
  if (models.length === 0) console.log(`no models in ${modelDir} (get one with: bun run models pull Xenova/all-MiniLM-L6-v2)`);
  for (const m of models) {
    const types = usedBy.get(m.id)?.join(', ') || 'no type';
    console.log(`${m.id.padEnd(36)} ${MB(m.bytes).padStart(9)}  ${m.dtypes.join('+') || 'no weights'}  used by: ${types}${m.missing.length ? `  (incomplete: missing ${m.missing.join(', ')})` : ''}`);
  }
  const useLite = usedBy.get('universal-sentence-encoder-lite');
  if (useLite) console.log(`${'universal-sentence-encoder-lite'.padEnd(36)} ${'built in'.padStart(9)}  used by: ${useLite.join(', ')}`);
} else {
  fail(`unknown command "${positionals[0]}"`);
}
