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

export const playgroundRoutes = () =>
  new Elysia({ name: 'playground' })
    .get('/playground', file(htmlPath, 'text/html; charset=utf-8'), hidden)
    .get('/playground/', ({ redirect }) => redirect('/playground', 301), hidden)
    .get('/playground/assets/playground.js', file(scriptPath, 'text/javascript; charset=utf-8'), hidden)
    .get('/playground/assets/playground.css', file(stylePath, 'text/css; charset=utf-8'), hidden);
