// Restart time of a server holding N content items, recovered by log replay only:
//   bun bench/restart.ts [--items 50000]
// Items are SciFact abstracts (replicated) when ../shared/eval is present, else generated text.
// The data directory is filled through the engine library, then the real server is started on it
// and timed from spawn to the first 200 of /ready.
import { parseArgs } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from '../engine';
import { NO_EMBEDDING, textKbConfig } from '../support/kb-config';
import { loadSciFact } from './lib/eval-data';
import { dirBytes } from './lib/files';
import { launchServer, waitFor } from './lib/server';

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { items: { type: 'string', default: '50000' } } });
const items = Number(values.items);
const dataDir = mkdtempSync(join(tmpdir(), 'kb-restart-'));
const ORG = 'org_bench';

const scifact = await loadSciFact();
const texts = scifact
  ? scifact.corpus.map((d) => d.text)
  : Array.from({ length: 1000 }, (_, i) => `Generated item ${i}. ${'lorem ipsum dolor sit amet '.repeat(40)}`);

const engine = await Engine.open({ dataDir, compute: { documentWorkers: 2 }, log: () => {} });
const kb = await engine.createKnowledgeBase(ORG, {
  name: 'restart bench',
  description: '',
  type: 'TEXT_HIGH_QUALITY',
  config: textKbConfig(NO_EMBEDDING, { bm25: { k1: 0.9, b: 0.4 } }),
});
const t = performance.now();
const batch = 500;
for (let i = 0; i < items; i += batch) {
  await Promise.all(Array.from({ length: Math.min(batch, items - i) }, (_, j) => engine.addContent(ORG, kb.id, { text: texts[(i + j) % texts.length]! })));
}
const ackSeconds = (performance.now() - t) / 1000;
while (engine.stats().queueDepth > 0) await Bun.sleep(100);
const indexSeconds = (performance.now() - t) / 1000;
const stats = engine.stats();
await engine.close();
const walBytes = dirBytes(join(dataDir, 'wal'));

const server = await launchServer({ env: { DATA_DIR: dataDir }, logLevel: 'info', keep: 100 });
const readyMs = await waitFor(server, '/ready', { intervalMs: 10, timeoutMs: Infinity });
const ready = (await (await fetch(`${server.base}/ready`)).json()) as { recovery: { millis: number } };
await server.stop();
rmSync(dataDir, { recursive: true, force: true });

console.log(
  JSON.stringify(
    {
      items,
      chunks: stats.chunks,
      corpus: scifact ? 'scifact-train (replicated)' : 'generated',
      ingestAckSeconds: +ackSeconds.toFixed(2),
      ingestIndexedSeconds: +indexSeconds.toFixed(2),
      walMiB: +(walBytes / 2 ** 20).toFixed(1),
      restartReadyMs: Math.round(readyMs),
      replayMs: ready.recovery.millis,
    },
    null,
    2,
  ),
);
