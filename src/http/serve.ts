// The HTTP listener around the Elysia app: one place that sees every response (including those
// answered before routing, such as 401, 413 and 429) for the access log and CORS headers, and
// answers CORS preflights before authentication.
import type { Logger } from '../logger';
import { errorBody } from '../errors';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id';
import { addCorsHeaders, preflightResponse, type CorsPolicy } from './cors';

// A Host header as RFC 9110 allows it: a registered name or an IP literal, and an optional port.
// Anything else (empty, spaces, "/", "@", userinfo) is refused before routing.
const HOST_SHAPE = /^(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

function badHost(): Response {
  return new Response(JSON.stringify(errorBody('VALIDATION_ERROR', 'The Host header is malformed', [{ path: '/headers/host', message: 'must be a host name or IP address with an optional port' }])), {
    status: 400,
    headers: { 'content-type': 'application/json', connection: 'close' },
  });
}

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
  /** Cross-origin policy (CORS_ORIGINS); absent: no CORS headers, preflights are ordinary requests. */
  cors?: CorsPolicy;
  /** Methods a path answers to (for preflights). */
  methodsOf?: (path: string) => string[];
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
      let response: Response;
      const host = request.headers.get('host');
      const preflight = options.cors && preflightResponse(request, options.cors, () => options.methodsOf?.(pathOf(url)) ?? []);
      if (host !== null && !HOST_SHAPE.test(host)) response = badHost();
      else if (preflight) response = preflight;
      else {
        options.activity?.begin();
        try {
          response = await handle(request);
        } finally {
          options.activity?.end();
        }
      }
      response.headers.set(REQUEST_ID_HEADER, requestId);
      if (options.cors) addCorsHeaders(request, response, options.cors);
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

/**
 * The path of a request URL ("http://host:port/a/b?x" → "/a/b") without building a URL object.
 * This is exactly how Elysia's router finds the path with `handler.standardHostname: false` (the
 * first "/" from offset 7, just past "http://"), so authentication and routing see one path. Elysia's
 * default (offset 11) assumes a host of 4+ characters: with "Host: x" it routed "/zz/api/v1/…" as
 * "/api/v1/…" while a check on the true path saw no API route.
 */
export function pathOf(url: string): string {
  const start = url.indexOf('/', 7);
  if (start < 0) return '/';
  const q = url.indexOf('?', start);
  return q < 0 ? url.slice(start) : url.slice(start, q);
}
