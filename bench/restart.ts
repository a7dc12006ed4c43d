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
import { NO_EMBEDDING, textKbConfig } from '../test/helpers/kb-config';
import { followOutput } from '../test/helpers/output';
import { loadSciFact } from './eval-data';

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { items: { type: 'string', default: '50000' } } });
const items = Number(values.items);
const dataDir = mkdtempSync(join(tmpdir(), 'kb-restart-'));
const ORG = 'org_bench';

const scifact = await loadSciFact();
const texts = scifact ? scifact.corpus.map((d) => d.text) : Array.from({ length: 1000 }, (_, i) => `Generated item ${i}. ${'lorem ipsum dolor sit amet '.repeat(40)}`);

const engine = await Engine.open({ dataDir, compute: { documentWorkers: 2 }, log: () => {} });
const kb = await engine.createKnowledgeBase(ORG, {
  name: 'restart bench',
  description: '',
  type: 'TEXT_HIGH_QUALITY',
  config: textKbConfig(NO_EMBEDDING, { bm25: { k1: 0.9, b: 0.4 } }),
});
let t = performance.now();
const batch = 500;
for (let i = 0; i < items; i += batch) {
  await Promise.all(Array.from({ length: Math.min(batch, items - i) }, (_, j) => engine.addContent(ORG, kb.id, { text: texts[(i + j) % texts.length]! })));
}
const ackSeconds = (performance.now() - t) / 1000;
while (engine.stats().queueDepth > 0) await Bun.sleep(100);
const indexSeconds = (performance.now() - t) / 1000;
const stats = engine.stats();
await engine.close();
const walBytes = Number(Bun.spawnSync(['du', '-sb', join(dataDir, 'wal')]).stdout.toString().split('\t')[0]);

t = performance.now();
const proc = Bun.spawn(['bun', join(import.meta.dir, '..', 'src/main.ts')], {
  env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info' },
  stdout: 'pipe',
  stderr: 'pipe',
});
// The server's log is drained for its whole life, so it never writes into a full pipe.
const port = await followOutput(proc, 100).port;
let readyMs = 0;
for (;;) {
  try {
    if ((await fetch(`http://127.0.0.1:${port}/ready`)).status === 200) {
      readyMs = performance.now() - t;
      break;
    }
  } catch {}
  await Bun.sleep(10);
}
const ready = (await (await fetch(`http://127.0.0.1:${port}/ready`)).json()) as { recovery: { millis: number } };
proc.kill('SIGTERM');
await proc.exited;
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
