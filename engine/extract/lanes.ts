// Extraction shared by organizations so no upload starves another:
// - two lanes: PDF, DOCX and images (parsers and OCR that may run for minutes) take the heavy lane;
//   text, Markdown, HTML, CSV and JSON take the light lane, so a small text file never waits for
//   OCR. The lane is picked from the file's name and first bytes (triage.ts) before it is read.
// - in each lane, organizations share the workers fairly (FairSlots): at most `perTenant` jobs of
//   one organization at once — by default all but one of the lane's workers, so another
//   organization always finds one — and waiting organizations take turns instead of first come,
//   first served.
// Both lanes run on one ExtractionPool of heavy + light workers: a lane is a share of the pool, not
// threads of its own (any idle thread will do, and one memory watchdog sees every file). Jobs enter
// the pool only when their lane has a slot, so the pool's own queue stays empty and a job always
// finds an idle worker.
import { open } from 'node:fs/promises';
import { FairSlots } from '../workers/fair-slots';
import { ExtractionPool, type ExtractionPoolOptions } from './pool';
import { HEAD_BYTES, laneOf, type Lane } from './triage';
import type { ExtractOptions, ExtractResult } from './types';

export interface ExtractionLanesOptions extends Omit<ExtractionPoolOptions, 'size'> {
  /** Workers of the heavy lane: PDF, DOCX, images (default 2). */
  heavyWorkers?: number;
  /** Workers of the light lane: text formats (default 2). */
  lightWorkers?: number;
  /** Most heavy-lane jobs of one organization at once (default: all workers but one, at least 1). */
  heavyPerTenant?: number;
}

async function readHead(path: string): Promise<Uint8Array> {
  const file = await open(path, 'r');
  try {
    const head = new Uint8Array(HEAD_BYTES);
    const { bytesRead } = await file.read(head, 0, HEAD_BYTES, 0);
    return head.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

export class ExtractionLanes {
  readonly pool: ExtractionPool;
  readonly lanes: Record<Lane, FairSlots>;

  constructor(options: ExtractionLanesOptions = {}) {
    const { heavyWorkers = 2, lightWorkers = 2, heavyPerTenant, ...pool } = options;
    const heavy = Math.max(1, Math.floor(heavyWorkers));
    const light = Math.max(1, Math.floor(lightWorkers));
    this.lanes = {
      heavy: new FairSlots(heavy, heavyPerTenant ?? Math.max(1, heavy - 1)),
      light: new FairSlots(light, Math.max(1, light - 1)),
    };
    this.pool = new ExtractionPool({ ...pool, size: heavy + light });
  }

  /**
   * Extracts the file at `path` for `tenant` once its lane has a slot for it; the file is read
   * only then, so waiting uploads hold no file in memory. Rejects with ExtractionError (and file
   * system errors) only.
   */
  async extractFile(tenant: string, path: string, fileName: string, options: ExtractOptions): Promise<ExtractResult> {
    const lane = laneOf(await readHead(path), fileName);
    return this.lanes[lane].run(tenant, async () => this.pool.extract(new Uint8Array(await Bun.file(path).arrayBuffer()), fileName, options));
  }

  /** As extractFile, for bytes in memory (moved to the worker like ExtractionPool.extract). */
  extract(tenant: string, bytes: Uint8Array, fileName: string, options: ExtractOptions): Promise<ExtractResult> {
    const lane = laneOf(bytes.subarray(0, HEAD_BYTES), fileName);
    return this.lanes[lane].run(tenant, () => this.pool.extract(bytes, fileName, options));
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
