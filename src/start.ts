// The server process (`bun run start`, the compiled binary): the process-wide concerns around
// createServer — the umask, one fatal line then exit 1, and SIGTERM/SIGINT for a graceful stop.
import { loadConfig } from './config';
import { createLogger, exitFatal } from './logger';
import { createServer } from './server';

// Everything this process writes (log, snapshots, graphs, originals, uploads in flight) is the
// tenants' data: readable by this user only, whatever the umask it was started with.
process.umask(0o077);
const config = loadConfig();
const logger = createLogger(config.logLevel, undefined, config.logFormat);
const server = await createServer(config, {
  logger,
  onFatal: (error) => exitFatal(logger, error.details, error.message),
});
await server.ready;

let stopping = false;
/** Stop accepting, let in-flight requests finish (bounded), flush the log, exit 0. */
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  await server.stop(signal);
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
