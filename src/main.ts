// Server entry point: listen at once (so /health and /ready answer during recovery), replay the
// log, then serve the API.
import { Engine } from '../engine/engine';
import { createApp } from './app';
import { KeyStore, keyFilePath } from './auth/key-store';
import { loadConfig } from './config';
import { createLogger } from './logger';

const config = loadConfig();
const logger = createLogger(config.logLevel);
let engine: Engine | undefined;

const keys = new KeyStore(keyFilePath(config.dataDir), config.apiKeys);
const app = createApp({ config, logger, engine: () => engine }, keys);

app.listen({
  port: config.port,
  hostname: config.host,
  // Bun's own cap; per-route limits are checked against Content-Length first (src/app.ts).
  maxRequestBodySize: config.limits.maxFileBytes + 2 * 1024 * 1024,
});
logger.info({ port: app.server?.port, host: config.host, dataDir: config.dataDir }, 'listening');

const fatal = (err: unknown) => {
  logger.fatal({ err: String(err) }, 'write-ahead log failed; exiting so a restart can recover from the log');
  process.exit(1);
};

try {
  engine = await Engine.open({
    dataDir: config.dataDir,
    workers: config.ingestWorkers,
    walSegmentBytes: config.walSegmentBytes,
    log: (level, message, details) => logger[level](details ?? {}, message),
    onFatal: fatal,
  });
  logger.info({ recovery: engine.recovery }, 'ready');
} catch (err) {
  logger.fatal({ err: err instanceof Error ? err.message : String(err) }, 'recovery failed');
  process.exit(1);
}

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'shutting down');
  await app.stop();
  await engine?.close();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
