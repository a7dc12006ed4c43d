// Request ids: the client's X-Request-Id when it is a sane token, else one made here (a random
// per-process prefix and a counter: unique, and cheaper than a UUID per request). The listener
// (src/http/serve.ts) puts it on every response; the app reads it for logs and 500 bodies.
export const REQUEST_ID_HEADER = 'x-request-id';

const PREFIX = crypto.randomUUID().slice(0, 8);
const CLIENT_ID = /^[\w.:-]{1,128}$/;
const ids = new WeakMap<Request, string>();
let counter = 0;

export function requestIdOf(request: Request): string {
  let id = ids.get(request);
  if (id === undefined) {
    const given = request.headers.get(REQUEST_ID_HEADER);
    id = given && CLIENT_ID.test(given) ? given : `${PREFIX}-${(++counter).toString(36)}`;
    ids.set(request, id);
  }
  return id;
}
