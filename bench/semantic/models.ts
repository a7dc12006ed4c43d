// bench/semantic.ts, the embedding models compared: USE-Lite always, and every transformers.js
// model found under MODELS_DIR; the knowledge base configuration each gets.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { EmbeddingConfig, EmbeddingSpec, KnowledgeBaseConfig } from '../../engine';
import { loadConfig } from '../../src/config';
import { configForType, resolveModel, type KbType } from '../../src/kb-types';
import { args, MODELS_DIR } from './options';

export type Quantization = EmbeddingConfig['quantization'];

export interface ModelChoice {
  /** Short name used for directories and tables. */
  name: string;
  spec: EmbeddingSpec;
}

const baseConfig = loadConfig();
export const serverConfig = { ...baseConfig, embedding: { ...baseConfig.embedding, modelDir: MODELS_DIR } };

/** Transformers.js sentence-transformers under MODELS_DIR: `<org>/<name>/onnx/model*.onnx` + config.json. */
function discoverModels(): { found: string[]; notes: string[] } {
  const notes: string[] = [];
  if (!existsSync(MODELS_DIR)) return { found: [], notes: [`${MODELS_DIR} does not exist: no transformers.js models to compare, USE-Lite only`] };
  const found: string[] = [];
  for (const org of readdirSync(MODELS_DIR)) {
    if (!statSync(join(MODELS_DIR, org)).isDirectory()) continue;
    for (const name of readdirSync(join(MODELS_DIR, org))) {
      const root = join(MODELS_DIR, org, name);
      if (!statSync(root).isDirectory()) continue;
      const onnx = existsSync(join(root, 'onnx')) ? readdirSync(join(root, 'onnx')).filter((f) => /^model.*\.onnx$/.test(f)) : [];
      if (!existsSync(join(root, 'config.json')) || onnx.length === 0) continue;
      if (!onnx.includes('model.onnx') && !onnx.includes('model_quantized.onnx')) {
        notes.push(`${org}/${name}: only ${onnx.join(', ')} (the transformers provider loads onnx/model.onnx or model_quantized.onnx); skipped`);
        continue;
      }
      found.push(`${org}/${name}`);
    }
  }
  if (found.length === 0) notes.push(`no transformers.js models under ${MODELS_DIR}: USE-Lite only`);
  return { found, notes };
}

export function chooseModels(): { models: ModelChoice[]; notes: string[] } {
  const { found, notes } = discoverModels();
  const wanted = args.models
    ? args.models
        .split(',')
        .map((m) => m.trim())
        .filter(Boolean)
    : ['use-lite', ...found];
  const models: ModelChoice[] = [];
  for (const w of wanted) {
    // `<id>@int8` (or `@fp32`) picks the ONNX export; without it the server's EMBEDDING_PRECISION.
    const [id = '', precision] = w.replace(/^transformers:/, '').split('@') as [string, ('fp32' | 'int8')?];
    if (id === 'use-lite') {
      models.push(useLite());
      continue;
    }
    try {
      const config = precision ? { ...serverConfig, embedding: { ...serverConfig.embedding, precision } } : serverConfig;
      const spec = resolveModel(`transformers:${id}`, config);
      if (precision && spec.provider === 'transformers' && spec.precision !== precision) throw new Error(`no ${precision} export of ${id}`);
      models.push({ name: `${id.replace(/\//g, '__')}${precision ? `-${precision}` : ''}`, spec });
    } catch (err) {
      notes.push(`${id}: ${err instanceof Error ? err.message : String(err)}; skipped`);
    }
  }
  return { models, notes };
}

/** The configuration the server would record for a TEXT_HIGH_QUALITY knowledge base with this model. */
export function kbConfig(spec: EmbeddingSpec, quantization: Quantization, type: KbType = 'TEXT_HIGH_QUALITY'): Omit<KnowledgeBaseConfig, 'id' | 'createdAt'> {
  const embedding = { ...spec, metric: 'cosine', quantization } as EmbeddingConfig;
  return configForType(type, serverConfig, { TEXT_COST_EFFECTIVE: embedding, TEXT_HIGH_QUALITY: embedding, TEXT_AND_MEDIA_HIGH_QUALITY: embedding });
}

export function computeSettings() {
  return { modelDir: MODELS_DIR, allowRemoteModels: false, threads: serverConfig.embedding.threads };
}

export const useLite = (): ModelChoice => ({ name: 'use-lite', spec: resolveModel('use-lite', serverConfig) });
