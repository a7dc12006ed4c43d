// `kb reembed <id>`: move a knowledge base to the model its type is served by now, with a progress
// bar until the new configuration answers searches (or at once with --no-wait).
import cliProgress from 'cli-progress';
import type { ReembedProgress as Progress, ReembedStart } from '../../engine';
import type { Api } from './api';

interface Answer {
  status: ReembedStart;
  activeKnowledgeBaseConfigurationId: string;
  reembedding: Progress | null;
}

const eta = (seconds: number | null) => (seconds === null ? '?' : seconds >= 90 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds)} s`);

export async function reembed(api: Api, kbId: string, options: { wait: boolean; pollMs?: number }): Promise<number> {
  const kbPath = `/api/v1/knowledge-bases/${encodeURIComponent(kbId)}`;
  const { data } = await api.call<Answer>('POST', `${kbPath}/reembed`);
  if (data.status === 'current' || !data.reembedding) {
    console.log(`${kbId} already uses the model its type is served by (configuration ${data.activeKnowledgeBaseConfigurationId})`);
    return 0;
  }
  const target = data.reembedding;
  console.log(
    `${data.status === 'started' ? 're-embedding' : 'already re-embedding'} ${kbId} with ${target.model} (configuration ${target.configurationId}); searches answer from the current one until it is complete`,
  );
  if (!options.wait) return 0;
  const bar = new cliProgress.SingleBar(
    { format: ' re-embedding |{bar}| {value}/{total} items · {rate} chunks/s · eta {eta_text}', hideCursor: true, noTTYOutput: true, notTTYSchedule: 2000 },
    cliProgress.Presets.shades_classic,
  );
  bar.start(target.total, target.done, { rate: '0', eta_text: eta(target.etaSeconds) });
  try {
    for (;;) {
      await Bun.sleep(options.pollMs ?? 500);
      const kb = (await api.call<{ activeKnowledgeBaseConfigurationId: string; reembedding: Progress | null }>('GET', kbPath)).data;
      if (kb.activeKnowledgeBaseConfigurationId === target.configurationId) {
        bar.update(bar.getTotal());
        break;
      }
      // Another build replaced this one (the server's model changed again), or it was cancelled.
      if (!kb.reembedding || kb.reembedding.configurationId !== target.configurationId) {
        bar.stop();
        console.error(`the re-embedding to ${target.configurationId} was replaced; the active configuration is ${kb.activeKnowledgeBaseConfigurationId}`);
        return 1;
      }
      bar.setTotal(kb.reembedding.total);
      bar.update(kb.reembedding.done, { rate: kb.reembedding.chunksPerSecond.toFixed(1), eta_text: eta(kb.reembedding.etaSeconds) });
    }
  } finally {
    bar.stop();
  }
  console.log(`${kbId} now answers from configuration ${target.configurationId} (${target.model})`);
  return 0;
}
