// The HTTP layer: authentication, the error envelope and the route modules, over the engine.
import { Elysia } from 'elysia';
import { EngineError, isEngineError } from '../engine';
import { ApiError, apiErrorOf, errorBody, STATUS_OF } from './errors';
import type { KeyStore } from './auth/key-store';
import type { ServerContext } from './http/context';
import { authenticate, verifiedOrg } from './http/auth';
import { parseJsonBody } from './http/body';
import { RateLimiter } from './http/rate-limit';
import { jsonAnswerBytes } from './http/json-bytes';
import { pathOf } from './http/serve';
import { catchUp, forward } from './http/forward';
import { wantsStrongRead, whenStrong } from './http/consistency';
import { RouteTable } from './http/methods';
import { requestIdOf } from './http/request-id';
import { clientAddressOf } from './http/client-address';
import { json } from './http/respond';
import { validationError } from './http/validation';
import { contentRoutes } from './routes/contents';
import { knowledgeBaseRoutes } from './routes/knowledge-bases';
import { docsRoutes } from './routes/docs';
import { operationRoutes } from './routes/operations';
import { playgroundRoutes } from './routes/playground';
import { reembedRoutes } from './routes/reembed';
import { searchRoutes } from './routes/search';
import { importRoutes } from './routes/import';
import { uploadRoutes } from './routes/uploads';
import type { UploadService } from './uploads';

const API_PREFIX = '/api/v1';
// What Response.json sends, so answers look the same whichever path made them.
const JSON_CONTENT_TYPE = 'application/json;charset=utf-8';

function rateLimited(seconds: number, message: string): Response {
  return json(429, errorBody('RATE_LIMITED', message), { 'retry-after': String(seconds) });
}

function apiErrorResponse(err: ApiError, requestId?: string): Response {
  return json(err.status, errorBody(err.code, err.message, err.details, err.status >= 500 ? requestId : undefined), err.headers);
}

/** File uploads: their body is streamed by their route, never parsed here. */
const isUploadPath = (path: string) => path.endsWith('/contents/file');
/** JSONL imports: streamed and parsed line by line by their route (src/routes/import.ts). */
const isImportPath = (path: string) => path.endsWith('/contents/import');
const isStreamedPath = (path: string) => isUploadPath(path) || isImportPath(path);

/** Which body limit applies to a path (file uploads and imports have their own, larger ones). */
function bodyLimit(ctx: ServerContext, path: string): number {
  if (isImportPath(path)) return ctx.config.limits.maxImportBytes;
  return isUploadPath(path) ? ctx.config.limits.maxFileBytes + 1024 * 1024 : ctx.config.limits.maxJsonBodyBytes;
}

/** The route types, for the typed client (src/client.ts). */
export type App = ReturnType<typeof createApp>;

export function createApp(ctx: ServerContext, keys: KeyStore, uploads: UploadService) {
  const limiter = new RateLimiter(ctx.config.rateLimit);
  const refusals = new RateLimiter(ctx.config.refusedAuthLimit);

  // strictPath: no loose trailing-slash match, so a path that dot segments shortened to "…/" (Bun
  // resolves "contents/.." to "contents/" and "…/<kb>/contents/.." to "…/<kb>/") is a 404, never the
  // parent's route. standardHostname: false makes the router find the path the way pathOf does.
  // The methods each path answers to, read from the routes once they are all registered (405 + Allow).
  let routeTable: RouteTable | undefined;
  let registered: () => readonly { method: string; path: string }[] = () => [];
  const app = new Elysia({ normalize: false, strictPath: true, handler: { standardHostname: false } })
    // The listener (src/http/serve.ts) puts the request id on every answer, these included.
    .onRequest(({ request }) => {
      const path = pathOf(request.url);
      if (!path.startsWith(`${API_PREFIX}/`) && path !== API_PREFIX) return;
      const org = authenticate(request, keys);
      if (org instanceof ApiError) {
        // Refused credentials are limited per client address, so keys cannot be guessed at line rate.
        const wait = refusals.take(clientAddressOf(request));
        if (wait > 0) return rateLimited(wait, `Too many requests with refused credentials from this address; retry in ${wait} s`);
        return apiErrorResponse(org);
      }
      const wait = limiter.take(org);
      if (wait > 0) return rateLimited(wait, `Too many requests for this organization; retry in ${wait} s`);
      const length = Number(request.headers.get('content-length') ?? 0);
      const limit = bodyLimit(ctx, path);
      if (length > limit) {
        return json(413, errorBody('PAYLOAD_TOO_LARGE', `The request body is larger than the limit of ${limit} bytes`), { connection: 'close' });
      }
    })
    .onParse({ as: 'global' }, ({ request, path }) => {
      // Uploads are streamed by their route (src/http/multipart.ts): nothing is buffered here. Nor is
      // the body of a request nobody authenticated: its route answers 401 (src/http/auth.ts).
      if (isStreamedPath(path) || verifiedOrg(request) === undefined) return {};
      // The body must arrive before the listener's idle timeout cuts the connection (then with no answer).
      return parseJsonBody(request, bodyLimit(ctx, path), Math.max(1000, ctx.config.idleTimeoutSeconds * 1000 - 2000));
    })
    .onError(({ code, error, request, body, set }) => {
      // In 500 bodies and logs; the listener puts it in the header.
      const requestId = requestIdOf(request);
      if (error instanceof ApiError) return apiErrorResponse(error, requestId);
      // Cluster mode with shards: the engine holds no content of this knowledge base here, so a node
      // that does answers (src/http/forward.ts); an upload's body is still unread and goes on as a stream.
      const cluster = ctx.config.cluster;
      const engine = ctx.engine();
      if (isEngineError(error, 'SHARD_NOT_HELD') && cluster && engine) {
        const sent = isStreamedPath(pathOf(request.url)) ? 'stream' : body;
        const answered = forward(request, sent, { ...error.details, appliedSeq: engine.lastSequence }, cluster.nodeId, ctx.config.waitTimeoutMs + 60_000).catch(
          (err: unknown) => {
            if (err instanceof ApiError) return apiErrorResponse(err, requestId);
            throw err;
          },
        );
        // Elysia answers an error with the status in `set` (500 unless the error carries one): the holder's stands.
        return answered.then((res) => {
          set.status = res.status;
          return res;
        });
      }
      if (error instanceof EngineError) {
        if (error.code === 'EMBEDDING_FAILED') ctx.logger.warn({ requestId, err: error.message }, 'embedding failed');
        const answer = apiErrorOf(error);
        if (answer.code === 'INTERNAL') ctx.logger.error({ requestId, code: error.code, err: error.message }, 'engine error');
        return apiErrorResponse(answer, requestId);
      }
      // Elysia wraps whatever a body parser throws (our size limit included) in a ParseError.
      const cause = (error as { cause?: unknown }).cause;
      if (code === 'PARSE' && cause instanceof ApiError) return apiErrorResponse(cause, requestId);
      switch (code) {
        case 'VALIDATION': {
          const where = (error as { type?: string }).type ?? 'request';
          return apiErrorResponse(validationError(error as never, where === 'body' ? 'request body' : `${where} parameters`), requestId);
        }
        case 'PARSE':
          return json(400, errorBody('INVALID_JSON', 'The request body is not valid JSON'));
        case 'NOT_FOUND': {
          routeTable ??= new RouteTable(registered());
          const path = pathOf(request.url);
          const allowed = routeTable.allowed(path);
          // A trailing slash stays 404: Bun has already turned `…/x/..` into `…/` (the two cannot be told
          // apart) and a dot segment must never reach another route. The answer names the route meant.
          const bare = path.length > 1 && path.endsWith('/') ? path.replace(/\/+$/, '') : undefined;
          const meant = allowed.length === 0 && bare ? routeTable.allowed(bare) : [];
          if (meant.length > 0) {
            return json(404, errorBody('NOT_FOUND', `No such route; without the trailing slash this path answers to ${meant.join(', ')}`));
          }
          if (allowed.length === 0) return json(404, errorBody('NOT_FOUND', 'No such route'));
          const message = `${request.method} is not allowed here; this path answers to ${allowed.join(', ')}`;
          return json(405, errorBody('METHOD_NOT_ALLOWED', message), { allow: allowed.join(', ') });
        }
        case 'INVALID_COOKIE_SIGNATURE':
          return json(400, errorBody('VALIDATION_ERROR', 'Invalid cookie'));
      }
      const status = (error as { status?: number }).status;
      if (status === 413) return json(413, errorBody('PAYLOAD_TOO_LARGE', 'The request body is too large'));
      ctx.logger.error({ requestId, err: error instanceof Error ? { message: error.message, stack: error.stack } : String(error) }, 'unhandled error');
      return json(STATUS_OF.INTERNAL, errorBody('INTERNAL', 'Internal server error', undefined, requestId));
    })
    // Plain-data answers are serialized by our byte writer (src/http/json-bytes.ts) rather than
    // Response.json: same bytes, a fraction of the cost for chunk texts.
    .mapResponse({ as: 'global' }, ({ responseValue, set }) => {
      const bytes = jsonAnswerBytes(responseValue);
      if (!bytes) return;
      const init = { status: set.status as number, headers: { ...(set.headers as Record<string, string>), 'content-type': JSON_CONTENT_TYPE } };
      // With a status or headers still in `set`, Elysia would copy this finished Response once more
      // (its body through a stream) to merge them in.
      set.status = 200;
      set.headers = {};
      return new Response(bytes, init);
    })
    // Cluster mode: a strong read (src/http/consistency.ts) first waits until this node has applied
    // the log as far as it reaches; a request forwarded here, until this node has applied it as far as
    // the sending node had (its client may have just made this knowledge base there). Not async:
    // other requests pass through without a promise.
    .onBeforeHandle({ as: 'global' }, ({ request }) => {
      const strong = wantsStrongRead(request);
      const engine = ctx.engine();
      if (!ctx.config.cluster || !engine) return;
      if (strong) return whenStrong(engine.whenCurrent);
      return catchUp(request, (seq, ms) => engine.whenApplied(seq, ms));
    })
    // The root points at the API documentation.
    .get('/', ({ redirect }) => redirect('/docs', 302), { detail: { hide: true } })
    .use(operationRoutes(ctx))
    .use(docsRoutes(ctx.version))
    .use(playgroundRoutes())
    .group(API_PREFIX, (api) =>
      api
        .use(knowledgeBaseRoutes(ctx))
        .use(reembedRoutes(ctx))
        .use(uploadRoutes(ctx, uploads))
        .use(importRoutes(ctx))
        .use(contentRoutes(ctx))
        .use(searchRoutes(ctx)),
    );
  registered = () => app.routes;
  return app;
}

/** The route templates, for the listener (src/http/serve.ts): CORS preflights and request labels. */
export function routeTableOf(app: ReturnType<typeof createApp>): RouteTable {
  return new RouteTable(app.routes);
}
