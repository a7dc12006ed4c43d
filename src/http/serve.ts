// The HTTP listener around the Elysia app: one place that sees every response (including those
// answered before routing, such as 401, 413 and 429) for the access log and CORS headers, and
// answers CORS preflights before authentication.
import type { Logger } from '../logger';
import { errorBody } from '../errors';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id';
import { addCorsHeaders, preflightResponse, type CorsPolicy } from './cors';
import { UNMATCHED, type RouteTable } from './methods';
import { rememberClientAddress } from './client-address';

// A Host header as RFC 9110 allows it: a registered name or an IP literal, and an optional port.
// Anything else (empty, spaces, "/", "@", userinfo) is refused before routing.
const HOST_SHAPE = /^(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

function badHost(): Response {
  return new Response(
    JSON.stringify(
      errorBody('VALIDATION_ERROR', 'The Host header is malformed', [
        { path: '/headers/host', message: 'must be a host name or IP address with an optional port' },
      ]),
    ),
    {
      status: 400,
      headers: { 'content-type': 'application/json', connection: 'close' },
    },
  );
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
  /** The app's route templates: methods a path answers to (preflights) and the label of a request. */
  routes?: RouteTable;
  /** The organization authenticated for a request (the access log names no unverified one). */
  orgOf?: (request: Request) => string | undefined;
}

export function serve(handle: (request: Request) => Promise<Response> | Response, options: ServeOptions) {
  return Bun.serve({
    port: options.port,
    hostname: options.hostname,
    maxRequestBodySize: options.maxRequestBodySize,
    idleTimeout: Math.min(255, options.idleTimeoutSeconds),
    // Never Bun's development error pages (stack traces) in answers, whatever NODE_ENV says.
    development: false,
    // A port another process listens on is an error. Bun turns SO_REUSEPORT on by default outside
    // development mode: a second server then listened on the same port and requests alternated
    // between the two.
    reusePort: false,
    async fetch(received, server) {
      const started = performance.now();
      if (received.url.includes('wait=') || received.url.includes('/contents/file') || received.url.includes('/contents/import'))
        server.timeout(received, Math.min(255, options.longRequestSeconds));
      const address = server.requestIP(received)?.address;
      // An HTTP/1.0 request without a Host header has a URL of only its path, which the router would
      // read from the wrong offset (see pathOf): it is given this server's own host.
      const request = received.url.startsWith('/') ? new Request(`http://localhost:${server.port}${received.url}`, received) : received;
      const url = request.url;
      rememberClientAddress(request, address);
      const requestId = requestIdOf(request);
      let response: Response;
      const host = request.headers.get('host');
      const preflight = options.cors && preflightResponse(request, options.cors, () => options.routes?.allowed(pathOf(url)) ?? []);
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
      // Labels are route templates (one for every unmatched path), so a client cannot grow /metrics.
      const route = options.routes?.template(request.method, pathOf(url)) ?? UNMATCHED;
      const ms = performance.now() - started;
      options.observe?.(request.method, route, response.status, ms / 1000);
      // Access log: never the API key or any content text. Probes and scrapes (/health, /ready,
      // /metrics: a load balancer or a start script polls them) only at debug.
      const level = QUIET_ROUTES.has(route) ? 'debug' : 'info';
      if (options.logger.isLevelEnabled(level))
        options.logger[level](
          {
            requestId,
            org: options.orgOf?.(request),
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

const QUIET_ROUTES = new Set(['/health', '/ready', '/metrics']);

/**
 * The path of a request URL ("http://host:port/a/b?x" → "/a/b") without building a URL object.
 * This is exactly how Elysia's router finds the path with `handler.standardHostname: false` (the
 * first "/" from offset 7, just past "http://"), so authentication and routing see one path. Elysia's
 * default (offset 11) assumes a host of 4+ characters: with "Host: x" it routed "/zz/api/v1/…" as
 * "/api/v1/…" while a check on the true path saw no API route.
 */
export function pathOf(url: string): string {
  // Character for character the router's own formula (Elysia's Bun adapter), edge cases included.
  const start = url.indexOf('/', 7);
  const q = url.indexOf('?', start + 1);
  return url.substring(start, q === -1 ? undefined : q);
}
