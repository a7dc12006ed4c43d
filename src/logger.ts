// Structured JSON logs. Never log API keys or content text.
import pino from 'pino';

/** JSON lines on stdout, or to `destination` (a test keeps an in-process server's lines apart). */
export function createLogger(level: string, destination?: pino.DestinationStream) {
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, destination);
}

export type Logger = ReturnType<typeof createLogger>;

/**
 * Log why the process stops, then exit 1. The logger buffers its output and Bun exits without
 * pino's flush at exit: a taken port exited with no word why. So the buffer is written out first.
 */
export function exitFatal(logger: Logger, details: Record<string, unknown>, message: string): never {
  logger.fatal(details, message);
  try {
    (logger as unknown as Record<symbol, { flushSync?: () => void } | undefined>)[pino.symbols.streamSym]?.flushSync?.();
  } catch {
    // Nothing buffered, or the output is gone: exit all the same.
  }
  process.exit(1);
}
