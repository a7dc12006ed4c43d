// Structured JSON logs. Never log API keys or content text.
import pino from 'pino';

export function createLogger(level: string) {
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime });
}

export type Logger = ReturnType<typeof createLogger>;
