// A JSON answer made outside a route's return value (hooks, errors, 503s): the same shape and
// content type wherever it is made.
export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}
