// The playground (src/playground/): a static page over the public API, served by this server
// (embedded in the binary like the docs' assets), so it works without internet access. Outside
// /api/v1: the page holds no data; its calls carry the key the user types in.
import { Elysia } from 'elysia';
import htmlPath from '#playground/index.html' with { type: 'file' };
import scriptPath from '#playground/playground.js' with { type: 'file' };
import stylePath from '#playground/playground.css' with { type: 'file' };

const file = (path: string, type: string) => () =>
  new Response(Bun.file(path), { headers: { 'content-type': type, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' } });

const hidden = { detail: { hide: true } };

/** A magnifying glass over a page: the tab icon of /playground and /docs (browsers ask for /favicon.ico). */
const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect x="3" y="2" width="20" height="26" rx="3" fill="#e2e8f0" stroke="#2b6cb0" stroke-width="2"/>' +
  '<circle cx="17" cy="16" r="6" fill="#fff" stroke="#2b6cb0" stroke-width="3"/><path d="M21.5 20.5 28 27" stroke="#2b6cb0" stroke-width="4" stroke-linecap="round"/></svg>';

export const playgroundRoutes = () =>
  new Elysia({ name: 'playground' })
    .get('/favicon.ico', () => new Response(FAVICON, { headers: { 'content-type': 'image/svg+xml', 'cache-control': 'public, max-age=86400' } }), hidden)
    .get('/playground', file(htmlPath, 'text/html; charset=utf-8'), hidden)
    .get('/playground/', ({ redirect }) => redirect('/playground', 301), hidden)
    .get('/playground/assets/playground.js', file(scriptPath, 'text/javascript; charset=utf-8'), hidden)
    .get('/playground/assets/playground.css', file(stylePath, 'text/css; charset=utf-8'), hidden);
