// The OpenAPI document (generated from the route schemas) and a Swagger UI page whose assets are
// served by this server, so the docs work without internet access.
import { openapi } from '@elysiajs/openapi';
import { Elysia } from 'elysia';
import bundlePath from 'swagger-ui-dist/swagger-ui-bundle.js' with { type: 'file' };
import cssPath from 'swagger-ui-dist/swagger-ui.css' with { type: 'file' };
import signInPath from '#playground/docs-sign-in.js' with { type: 'file' };

const asset = (path: string, type: string) => () =>
  new Response(Bun.file(path), { headers: { 'content-type': type, 'cache-control': 'public, max-age=86400' } });

/** Swagger UI's bundle with our sign-in (one step authorizes both headers) after it, made once. */
let bundleWithSignIn: Promise<string> | undefined;
const bundle = async () =>
  new Response(await (bundleWithSignIn ??= Promise.all([Bun.file(bundlePath).text(), Bun.file(signInPath).text()]).then(([b, s]) => `${b}\n${s}`)), {
    headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' },
  });

export const docsRoutes = (version: string) =>
  new Elysia({ name: 'docs' })
    // The page loads its document by a relative URL, which only resolves from /docs itself.
    .get('/docs/', ({ redirect }) => redirect('/docs', 301), { detail: { hide: true } })
    .get('/docs/assets/swagger-ui-bundle.js', bundle, { detail: { hide: true } })
    .get('/docs/assets/swagger-ui.css', asset(cssPath, 'text/css; charset=utf-8'), { detail: { hide: true } })
    .use(
      openapi({
        path: '/docs',
        specPath: '/openapi.json',
        provider: 'swagger-ui',
        swagger: { cdn: '/docs/assets/swagger-ui-bundle.js', theme: '/docs/assets/swagger-ui.css', autoDarkMode: false },
        exclude: { paths: ['/docs/assets/swagger-ui-bundle.js', '/docs/assets/swagger-ui.css'] },
        documentation: {
          info: {
            title: 'Knowledge base search API',
            version,
            description:
              'Knowledge bases of an organization hold content items (text or uploaded files), chunked and indexed in the background, searched by full-text (BM25), semantic (cosine) and hybrid (weighted blend) search.\n\n' +
              "Every `/api/v1` route needs both `x-service-api-key` and `x-service-organization-id`. Errors use the envelope `{ success: false, error: { code, message, details? } }` with the codes: 400 VALIDATION_ERROR, INVALID_JSON, KB_TYPE_IMMUTABLE, UNSUPPORTED_FILE_TYPE, EMPTY_FILE, NO_TEXT_EXTRACTED; 401 UNAUTHORIZED; 404 NOT_FOUND (also for another organization's resources and malformed ids); 405 METHOD_NOT_ALLOWED (with Allow); 413 PAYLOAD_TOO_LARGE; 429 RATE_LIMITED (with Retry-After); 500 INTERNAL (with a request id); 502 EXTRACTION_FAILED, EMBEDDING_FAILED; 503 NOT_READY.\n\n" +
              'Choices beyond the contract: `?wait=true` on create, upload and update answers once the item is ready or failed (bounded); content reads add `status`, `error`, `chunkCount`, `updatedAt`, `source`; search hits add `contentId`, `metadata` and `page`; hybrid hits add `fullTextScore` and `semanticScore`, and `fusion: "rrf"` selects reciprocal rank fusion; in cluster mode the header `x-kb-consistency: strong` makes a node apply the shared log to its end before answering (read-your-writes across nodes); ordering is score descending then chunk id ascending.',
          },
          components: {
            securitySchemes: {
              apiKey: { type: 'apiKey', in: 'header', name: 'x-service-api-key' },
              organization: { type: 'apiKey', in: 'header', name: 'x-service-organization-id' },
            },
          },
          security: [{ apiKey: [], organization: [] }],
          tags: [
            { name: 'Knowledge bases', description: 'Collections of an organization; the type fixes the embedding configuration.' },
            { name: 'Contents', description: 'Text and files, chunked and embedded in the background.' },
            { name: 'Search', description: 'Full-text, semantic and hybrid search over chunks.' },
            { name: 'Operations', description: 'Health, readiness and metrics (no authentication).' },
          ],
        },
      }),
    );
