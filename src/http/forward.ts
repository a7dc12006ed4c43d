// Cluster mode with shards: a request about a knowledge base whose shard this node does not hold
// is sent on to a live node that holds it, and its answer comes back unchanged. Forwarding happens
// after this node authenticated the request and the router matched its route; the other node
// authenticates it again with the same headers (keys hold on every node), so forwarding grants
// nothing. A forwarded request carries FORWARDED_HEADER and is never forwarded again: a node that
// receives one for a shard it does not hold answers 503 (the cluster's views of who holds what
// differ for a moment).
import type { NodeEntry } from '../../engine';
import { ApiError } from '../errors';
import { pathOf } from './serve';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id';

export const FORWARDED_HEADER = 'x-kb-forwarded-by';
/** The log position the forwarding node had applied: the receiving node applies as far before answering. */
export const APPLIED_HEADER = 'x-kb-applied-seq';
/** How long a receiving node waits to reach that position before it answers 503. */
const CATCH_UP_MS = 5000;

/** Headers that describe one connection, not the request (and the length, recomputed). */
const HOP_BY_HOP = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'upgrade', 'te', 'trailer', 'expect']);

export interface ForwardTarget {
  shard: number;
  /** Live nodes holding the shard, in the order to try them. */
  nodes: NodeEntry[];
  /** The log position this node has applied (the target catches up to it first). */
  appliedSeq?: number;
}

const unavailable = (shard: number, why: string) =>
  new ApiError('NOT_READY', `No node holding shard ${shard} of this knowledge base answers (${why}); retry shortly`, undefined, { 'retry-after': '1' });

/** A connection that was never made: the request did not reach the node, so another may take it. */
function neverSent(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === 'ConnectionRefused' || code === 'ECONNREFUSED' || code === 'FailedToOpenSocket';
}

/**
 * Send the request to a node of `target` and hand back its answer. `body`: what the JSON body
 * parser read, or 'stream' for an upload, whose body is still unread and goes on as a stream.
 * Throws ApiError 503 when no node of the shard can be reached.
 */
export async function forward(request: Request, body: unknown, target: ForwardTarget, selfId: string, timeoutMs: number): Promise<Response> {
  if (request.headers.has(FORWARDED_HEADER))
    throw unavailable(target.shard, `forwarded here by ${request.headers.get(FORWARDED_HEADER)}, which takes this node for a holder`);
  if (target.nodes.length === 0) throw unavailable(target.shard, 'none is alive');
  const headers = new Headers();
  request.headers.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name)) headers.set(name, value);
  });
  headers.set(FORWARDED_HEADER, selfId);
  if (target.appliedSeq !== undefined) headers.set(APPLIED_HEADER, String(target.appliedSeq));
  headers.set(REQUEST_ID_HEADER, requestIdOf(request));
  const streamed = body === 'stream' && request.body !== null;
  let payload: ReadableStream | string | undefined;
  if (streamed) payload = request.body!;
  else if (body !== undefined && (request.method === 'POST' || request.method === 'PUT' || request.method === 'PATCH')) {
    payload = JSON.stringify(body);
    headers.set('content-type', 'application/json');
  }
  // From the URL as text: a request without a Host header (HTTP/1.0) has no host to parse a URL
  // with ("Invalid URL"), and only the path and query go on.
  const query = request.url.indexOf('?');
  const pathAndQuery = pathOf(request.url) + (query < 0 ? '' : request.url.slice(query));
  let lastError: unknown;
  for (const [i, node] of target.nodes.entries()) {
    try {
      const answer = await fetch(node.url.replace(/\/+$/, '') + pathAndQuery, {
        method: request.method,
        headers,
        body: payload,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
        // A streamed request body (Bun, as Node's fetch) says so.
        duplex: streamed ? 'half' : undefined,
      });
      // 503: the node did nothing (it is starting or stopping, or does not hold the shard after all);
      // another holder may answer. A streamed body is gone, so its answer stands.
      if (answer.status === 503 && !streamed && i < target.nodes.length - 1) {
        lastError = new Error(`${node.nodeId} answered 503`);
        await answer.body?.cancel();
        continue;
      }
      const out = new Headers();
      answer.headers.forEach((value, name) => {
        if (!HOP_BY_HOP.has(name) && name !== 'content-encoding' && name !== REQUEST_ID_HEADER) out.set(name, value);
      });
      return new Response(answer.body, { status: answer.status, headers: out });
    } catch (err) {
      lastError = err;
      // A request that may have reached the node is not sent twice (it may have been applied);
      // a streamed upload cannot be sent twice.
      if (!neverSent(err) || streamed) break;
    }
  }
  throw unavailable(target.shard, String((lastError as Error)?.message ?? lastError));
}

/**
 * On the receiving node: a forwarded request is answered once this node has applied the log as far
 * as the forwarding node had, so what its client wrote there (a knowledge base just made) is here
 * too. ApiError 503 when that takes longer than CATCH_UP_MS.
 */
export function catchUp(request: Request, whenApplied: (seq: number, timeoutMs: number) => Promise<boolean>): Promise<void> | undefined {
  // Undefined (no promise) for every request that was not forwarded: the common path stays synchronous.
  if (!request.headers.has(FORWARDED_HEADER)) return;
  const seq = Number(request.headers.get(APPLIED_HEADER));
  if (!Number.isSafeInteger(seq) || seq <= 0) return;
  return whenApplied(seq, CATCH_UP_MS).then((reached) => {
    if (!reached)
      throw new ApiError(
        'NOT_READY',
        `This node has not yet applied the log as far as the node that forwarded the request (record ${seq}); retry shortly`,
        undefined,
        { 'retry-after': '1' },
      );
  });
}
