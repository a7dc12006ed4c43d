// Cross-origin requests (CORS_ORIGINS, off by default): browsers on the listed origins may call the
// API. A preflight is answered here, before authentication (a browser sends it without the API
// headers); every answer to an allowed origin says so. API keys travel in headers, never cookies,
// so no credentials mode is offered.

export interface CorsPolicy {
  /** `*` for any origin, else the exact origins allowed ("https://app.example.com"). */
  origins: '*' | ReadonlySet<string>;
}

/** Headers a browser may send on a cross-origin API call. */
const ALLOWED_HEADERS = 'content-type, x-service-api-key, x-service-organization-id, x-request-id, x-kb-consistency';
/** Headers a page may read from an answer. */
const EXPOSED_HEADERS = 'x-request-id, retry-after, allow';
const PREFLIGHT_MAX_AGE_S = '600';

/** `CORS_ORIGINS`: empty → off; `*`; or origins separated by commas. Throws on a malformed origin. */
export function parseCorsOrigins(setting: string | undefined): CorsPolicy | undefined {
  const value = (setting ?? '').trim();
  if (value === '') return undefined;
  if (value === '*') return { origins: '*' };
  const origins = new Set<string>();
  for (const raw of value.split(',')) {
    const origin = raw.trim().replace(/\/$/, '');
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      throw new Error(`CORS_ORIGINS: "${raw.trim()}" is not an origin (scheme://host[:port])`);
    }
    if (url.origin !== origin) throw new Error(`CORS_ORIGINS: "${raw.trim()}" is not an origin (scheme://host[:port]); did you mean "${url.origin}"?`);
    origins.add(origin);
  }
  return { origins };
}

function allowedOrigin(request: Request, policy: CorsPolicy): string | undefined {
  const origin = request.headers.get('origin');
  if (origin === null) return undefined;
  if (policy.origins === '*') return '*';
  return policy.origins.has(origin) ? origin : undefined;
}

/**
 * The answer to a CORS preflight (OPTIONS with Origin and Access-Control-Request-Method), or
 * undefined when the request is not one. An origin that is not allowed gets no CORS headers, so the
 * browser refuses the call.
 */
export function preflightResponse(request: Request, policy: CorsPolicy, methodsOf: () => string[]): Response | undefined {
  if (request.method !== 'OPTIONS' || !request.headers.has('origin') || !request.headers.has('access-control-request-method')) return undefined;
  const methods = methodsOf();
  if (methods.length === 0) return undefined; // no such path: routing answers 404
  const headers: Record<string, string> = { vary: 'Origin' };
  const origin = allowedOrigin(request, policy);
  if (origin !== undefined) {
    Object.assign(headers, {
      'access-control-allow-origin': origin,
      'access-control-allow-methods': methods.join(', '),
      'access-control-allow-headers': ALLOWED_HEADERS,
      'access-control-max-age': PREFLIGHT_MAX_AGE_S,
    });
  }
  return new Response(null, { status: 204, headers });
}

/** Mark an answer readable by the requesting page when its origin is allowed. */
export function addCorsHeaders(request: Request, response: Response, policy: CorsPolicy): void {
  const origin = allowedOrigin(request, policy);
  const vary = response.headers.get('vary');
  if (!vary?.split(',').some((v) => v.trim().toLowerCase() === 'origin')) response.headers.set('vary', vary ? `${vary}, Origin` : 'Origin');
  if (origin === undefined) return;
  response.headers.set('access-control-allow-origin', origin);
  response.headers.set('access-control-expose-headers', EXPOSED_HEADERS);
}
