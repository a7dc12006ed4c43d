// OCR with tesseract.js and the English LSTM data shipped by @tesseract.js-data/eng (read from
// node_modules, never downloaded). One tesseract worker per thread is created on first use, reused,
// and shut down after a minute without work.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Worker as TesseractWorker } from 'tesseract.js';

const IDLE_MS = 60_000;

let engine: Promise<TesseractWorker> | undefined;
let idleTimer: ReturnType<typeof setTimeout> | undefined;

/** Folder holding `eng.traineddata.gz` (the integer "best" LSTM model, 2.9 MB). */
export function englishDataPath(): string {
  // The compiled binary (scripts/build.ts) embeds eng.traineddata.gz in this folder.
  if (Bun.isStandaloneExecutable) return '/$bunfs/root/kb-assets/tessdata';
  const pkg = fileURLToPath(import.meta.resolve('@tesseract.js-data/eng/package.json'));
  return join(dirname(pkg), '4.0.0_best_int');
}

async function start(): Promise<TesseractWorker> {
  const { createWorker, OEM } = await import('tesseract.js');
  return createWorker('eng', OEM.LSTM_ONLY, {
    langPath: englishDataPath(),
    gzip: true,
    cacheMethod: 'none', // never write eng.traineddata into the working directory
    logger: () => {},
    errorHandler: () => {},
  });
}

function getEngine(): Promise<TesseractWorker> {
  if (!engine) {
    engine = start();
    engine.catch(() => {
      engine = undefined;
    });
  }
  return engine;
}

function scheduleIdleShutdown(): void {
  if (idleTimer) clearTimeout(idleTimer);
  idleTimer = setTimeout(() => void shutdownOcr(), IDLE_MS);
  (idleTimer as { unref?: () => void }).unref?.();
}

/** Text read from an encoded image (PNG, JPEG, WebP, TIFF, BMP). */
export async function recognize(image: Uint8Array): Promise<string> {
  if (idleTimer) clearTimeout(idleTimer);
  const worker = await getEngine();
  try {
    const result = await worker.recognize(Buffer.from(image.buffer, image.byteOffset, image.byteLength));
    return result.data.text ?? '';
  } finally {
    scheduleIdleShutdown();
  }
}

/** Terminates this thread's tesseract worker (a later call starts a new one). */
export async function shutdownOcr(): Promise<void> {
  if (idleTimer) clearTimeout(idleTimer);
  idleTimer = undefined;
  const current = engine;
  engine = undefined;
  if (current) {
    try {
      await (await current).terminate();
    } catch {
      // already gone
    }
  }
}
