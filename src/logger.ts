// Structured JSON logs. Never log API keys or content text.
import pino from 'pino';

/**
 * JSON lines on stdout, or to `destination` (a test keeps an in-process server's lines apart).
 * `pretty` (default on a terminal): one readable line per event instead.
 */
export function createLogger(level: string, destination?: pino.DestinationStream, format?: 'pretty' | 'json') {
  const pretty = format === 'pretty' || (format === undefined && destination === undefined && process.stdout.isTTY === true);
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, pretty ? prettyLines(destination) : destination);
}

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };

/** "12:03:04 INFO  listening port=3000 host=0.0.0.0" from each JSON line pino writes. */
export function prettyLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.trimEnd();
  }
  const { time, level, msg, ...rest } = entry;
  const clock = typeof time === 'string' ? time.slice(11, 19) : '';
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' && !/\s/.test(v) ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${clock} ${LEVELS[level as number] ?? String(level)} ${msg ?? ''}${fields ? ` ${fields}` : ''}`;
}

function prettyLines(destination?: pino.DestinationStream): pino.DestinationStream {
  const out = destination ?? pino.destination({ dest: 1, sync: true });
  return { write: (line: string) => void out.write(`${prettyLine(line)}\n`) };
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
