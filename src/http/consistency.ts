// Reads in cluster mode answer from what the node has applied: a write another node answered a
// moment ago may not be here yet (milliseconds; longer on a loaded machine). A request with
// `x-kb-consistency: strong` is answered once this node has applied the shared log as far as it
// reached when the request came, so it sees every write answered before it, on any node, at the
// cost of one round trip to NATS. On a single node every read is strong already.
import { ApiError } from '../errors';

export const CONSISTENCY_HEADER = 'x-kb-consistency';
/** How long a strong read waits for this node to apply the log before it answers 503. */
const CURRENT_MS = 5000;

/** Whether the request asks for a strong read; ApiError 400 for a value that means nothing. */
export function wantsStrongRead(request: Request): boolean {
  const value = request.headers.get(CONSISTENCY_HEADER);
  if (value === null) return false;
  const level = value.trim().toLowerCase();
  if (level === 'strong') return true;
  if (level === 'eventual') return false;
  throw new ApiError('VALIDATION_ERROR', `The ${CONSISTENCY_HEADER} header is "strong" or "eventual" (the default), not "${value.slice(0, 40)}"`);
}

/** Resolves once this node is current; ApiError 503 when it cannot be within CURRENT_MS. */
export async function whenStrong(whenCurrent: (timeoutMs: number) => Promise<boolean>): Promise<void> {
  if (!(await whenCurrent(CURRENT_MS)))
    throw new ApiError(
      'NOT_READY',
      `This node could not apply the log as far as it reaches within ${CURRENT_MS} ms for a strong read; retry shortly`,
      undefined,
      {
        'retry-after': '1',
      },
    );
}
