import type { Engine } from '../../engine';
import { ApiError } from '../errors';
import type { ServerContext } from '../http/context';

export function requireEngine(ctx: ServerContext): Engine {
  const engine = ctx.engine();
  if (!engine) throw new ApiError('NOT_READY', 'The server is still recovering its state; retry shortly', undefined, { 'retry-after': '1' });
  return engine;
}
