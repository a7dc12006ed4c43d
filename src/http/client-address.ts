// The address a request came from, as the listener (src/http/serve.ts) saw its connection: the app
// handles requests without Bun's server object, so the listener remembers it per request.
const addresses = new WeakMap<Request, string>();

export function rememberClientAddress(request: Request, address: string | undefined): void {
  if (address !== undefined) addresses.set(request, address);
}

/** The peer address of the request's connection ('unknown' for requests made in-process). */
export function clientAddressOf(request: Request): string {
  return addresses.get(request) ?? 'unknown';
}
