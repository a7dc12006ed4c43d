// What every phase of bench/snapshot.ts shares: the item texts, the engine's settings (vectors from
// the stub), engines opened with their snapshotters, ingestion, and the problems and engine
// warnings collected for the report.
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Engine, EngineOptions } from '../../engine';
import { openEngine, type Snapshotter } from '../../snapshots';
import { textKbConfig } from '../../support/kb-config';
import { loadSciFact } from '../lib/eval-data';
import { HASH_DIMENSIONS, HASH_MODEL } from '../lib/hash-embed';
import { CHUNKING, ORG } from './options';
import { round2 } from './units';

export interface EngineLogEntry {
  level: string;
  message: string;
  details?: Record<string, unknown>;
}

export type BenchContext = Awaited<ReturnType<typeof createContext>>;

export async function createContext(stubUrl: string, t0: number) {
  const problems: string[] = [];
  const engineLog: EngineLogEntry[] = [];
  const log = (level: 'info' | 'warn' | 'error', message: string, details?: Record<string, unknown>) => {
    if (level !== 'info') engineLog.push({ level, message, details });
  };
  const say = (s: string) => console.log(s);
  const elapsed = () => `${((performance.now() - t0) / 1000).toFixed(0)}s`;

  const scifact = await loadSciFact();
  if (!scifact) throw new Error('SciFact not found (../shared/eval/scifact-train or SCIFACT_DIR)');
  const corpus = scifact.corpus.map((d) => d.text);
  /** Item i: an abstract with a tag of its own, so every item's text is unique. */
  const itemText = (i: number) => `${corpus[i % corpus.length]!}\n\n[bench item ${i}]`;

  const compute: EngineOptions['compute'] = { documentWorkers: 2, settings: { http: { url: stubUrl } } };
  const kbConfig = textKbConfig(
    { provider: 'http', model: HASH_MODEL, dimensions: HASH_DIMENSIONS, metric: 'cosine', quantization: 'f32' },
    { chunking: CHUNKING },
  );

  /** Engines opened here, with their snapshots (snapshots/snapshotter.ts). */
  const snapshotters = new Map<Engine, Snapshotter>();
  async function open(dataDir: string): Promise<Engine> {
    const { engine, snapshots } = await openEngine({ dataDir, compute, log });
    snapshotters.set(engine, snapshots);
    return engine;
  }
  const snapshotsOf = (engine: Engine) => snapshotters.get(engine)!;

  /** Add items [from, from + count) with 500 in flight, then wait until they are indexed. */
  async function ingest(engine: Engine, kbId: string, from: number, count: number): Promise<{ ackSeconds: number; indexedSeconds: number }> {
    const started = performance.now();
    let lastReport = started;
    const progress = () => {
      if (performance.now() - lastReport < 20_000) return;
      lastReport = performance.now();
      say(`  [${elapsed()}] ${engine.stats().chunks} chunks indexed, queue ${engine.stats().queueDepth}`);
    };
    for (let i = 0; i < count; i += 500) {
      await Promise.all(Array.from({ length: Math.min(500, count - i) }, (_, j) => engine.addContent(ORG, kbId, { text: itemText(from + i + j) })));
      progress();
    }
    const ackSeconds = (performance.now() - started) / 1000;
    while (engine.stats().queueDepth > 0) {
      await Bun.sleep(100);
      progress();
    }
    return { ackSeconds: round2(ackSeconds), indexedSeconds: round2((performance.now() - started) / 1000) };
  }

  async function failedItems(engine: Engine, where: string): Promise<void> {
    const failed = (await engine.metrics()).contentsByStatus.failed ?? 0;
    if (failed > 0) problems.push(`${failed} items failed to index (${where})`);
  }

  return { problems, engineLog, say, t0, elapsed, itemText, stubUrl, kbConfig, open, snapshotsOf, ingest, failedItems };
}

/** A working copy of a data directory (without the bench's own notes in it). */
export function copyDir(from: string, to: string): void {
  rmSync(to, { recursive: true, force: true });
  cpSync(from, to, { recursive: true });
  rmSync(join(to, 'bench-meta.json'), { force: true });
}
