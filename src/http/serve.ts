// The HTTP listener around the Elysia app: one place that sees every response (including those
// answered before routing, such as 401, 413 and 429) for the access log.
import type { Logger } from '../logger';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id';

const KNOWN_TOP = new Set(['health', 'ready', 'metrics', 'docs', 'openapi.json', 'api']);

/** Route label for logs and metrics: path parameters replaced by placeholders, so labels stay few. */
export function routeLabel(path: string): string {
  const segs = path.split('/');
  if (!KNOWN_TOP.has(segs[1] ?? '')) return '(other)';
  for (let i = 1; i < segs.length; i++) {
    if (segs[i - 1] === 'knowledge-bases') segs[i] = ':id';
    else if (segs[i - 1] === 'contents' && segs[i] !== 'file') segs[i] = ':contentId';
  }
  return segs.join('/');
}

/** Requests in flight and when the last one ended: background work runs faster while idle. */
export class RequestActivity {
  private inFlight = 0;
  private lastEnd = 0;

  begin(): void {
    this.inFlight++;
  }

  end(): void {
    this.inFlight--;
    this.lastEnd = performance.now();
  }

  /** No request in flight, and none ended in the last `quietMs`. */
  idle(quietMs = 200): boolean {
    return this.inFlight === 0 && performance.now() - this.lastEnd >= quietMs;
  }
}

export interface ServeOptions {
  port: number;
  hostname: string;
  maxRequestBodySize: number;
  logger: Logger;
  /** Every response, for metrics. */
  observe?: (method: string, route: string, status: number, seconds: number) => void;
  /** Seconds a connection may stay silent (slow clients are cut off). */
  idleTimeoutSeconds: number;
  /** Requests allowed to take long (uploads, `?wait=true`) get this many seconds instead. */
  longRequestSeconds: number;
  activity?: RequestActivity;
}

export function serve(handle: (request: Request) => Promise<Response> | Response, options: ServeOptions) {
  return Bun.serve({
    port: options.port,
    hostname: options.hostname,
    maxRequestBodySize: options.maxRequestBodySize,
    idleTimeout: Math.min(255, options.idleTimeoutSeconds),
    // Never Bun's development error pages (stack traces) in answers, whatever NODE_ENV says.
    development: false,
    async fetch(request, server) {
      const started = performance.now();
      const url = request.url;
      if (url.includes('wait=') || url.includes('/contents/file')) server.timeout(request, Math.min(255, options.longRequestSeconds));
      const requestId = requestIdOf(request);
      options.activity?.begin();
      let response: Response;
      try {
        response = await handle(request);
      } finally {
        options.activity?.end();
      }
      response.headers.set(REQUEST_ID_HEADER, requestId);
      const route = routeLabel(pathOf(url));
      const ms = performance.now() - started;
      options.observe?.(request.method, route, response.status, ms / 1000);
      // Access log: never the API key or any content text.
      if (options.logger.isLevelEnabled('info')) options.logger.info(
        {
          requestId,
          org: request.headers.get('x-service-organization-id') ?? undefined,
          method: request.method,
          route,
          status: response.status,
          ms: Math.round(ms * 100) / 100,
        },
        'request',
      );
      return response;
    },
  });
}

/** The path of a request URL ("http://host:port/a/b?x" → "/a/b") without building a URL object. */
export function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2);
  if (start < 0) return '/';
  const q = url.indexOf('?', start);
  return q < 0 ? url.slice(start) : url.slice(start, q);
}
