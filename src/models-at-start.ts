// EMBEDDING_ALLOW_REMOTE=true: a model named in the configuration (`transformers:<id>` in
// HIGH_QUALITY_MODEL or COST_EFFECTIVE_MODEL) that EMBEDDING_MODEL_DIR lacks is pulled from the hub
// at first start, with the same checked, resumable download as `models pull`, before the server
// resolves its models (so it is ready only once the model is in place). `auto` names no model:
// it picks among those present, else the model shipped with the server (as `shipped` does). Later
// starts find the files and never ask the hub.
import { locateModel, missingModelFiles, pullModel, type PullProgress } from '../engine';
import type { Config } from './config';
import { modelDirs } from './kb-types';
import type { Logger } from './logger';

/** Model ids the configuration names explicitly. */
function configuredModelIds(config: Config): string[] {
  const settings = [config.embedding.highQualityModel, config.embedding.costEffectiveModel];
  return [...new Set(settings.filter((s) => s.startsWith('transformers:')).map((s) => s.slice('transformers:'.length)))];
}

/** Pulls the missing configured models; throws a ModelPullError (naming the folder to fill by hand) when the hub cannot give them. */
export async function pullConfiguredModels(config: Config, logger: Logger): Promise<void> {
  if (!config.embedding.allowRemoteModels) return;
  const { modelDir, hubUrl, precision } = config.embedding;
  for (const id of configuredModelIds(config)) {
    // The shipped model's folder counts: the int8 export it holds serves EMBEDDING_PRECISION=int8.
    if (locateModel(modelDirs(config, id), id, precision)) continue;
    const missing = missingModelFiles(modelDir, id, [precision]);
    logger.info({ model: id, hub: hubUrl, modelDir, missing }, 'pulling the configured embedding model (EMBEDDING_ALLOW_REMOTE=true)');
    let logged = 0;
    const onProgress = ({ file, received, total }: PullProgress) => {
      const done = total !== undefined && received >= total;
      if (!done && Date.now() - logged < 5000) return;
      logged = Date.now();
      logger.info(
        { model: id, file, receivedMB: +(received / 2 ** 20).toFixed(1), totalMB: total === undefined ? undefined : +(total / 2 ** 20).toFixed(1) },
        done ? 'model file downloaded' : 'downloading model file',
      );
    };
    const started = performance.now();
    const { dir, files } = await pullModel(id, { modelDir, hubUrl, dtypes: [precision], onProgress });
    const bytes = files.reduce((sum, f) => sum + f.bytes, 0);
    logger.info(
      { model: id, dir, files: files.length, megabytes: +(bytes / 2 ** 20).toFixed(1), seconds: +((performance.now() - started) / 1000).toFixed(1) },
      'embedding model pulled',
    );
  }
}
