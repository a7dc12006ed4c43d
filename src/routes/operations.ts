// Health, readiness and metrics: outside /api/v1, no authentication (load balancers and
// Prometheus call them), documented with what they answer.
import { Elysia, t } from 'elysia';
import { errorBody } from '../errors';
import type { ServerContext } from '../http/context';
import { json } from '../http/respond';
import { errorAnswers } from '../schemas/common';

const open = { security: [], tags: ['Operations'] };

const HealthSchema = t.Object({ success: t.Literal(true), status: t.Literal('ok') });

const ReadySchema = t.Object({
  success: t.Literal(true),
  status: t.Literal('ready'),
  warnings: t.Array(t.String(), { description: 'Said loudly: for example a high-quality type served by the small fallback model.' }),
  recovery: t.Object({}, { additionalProperties: true, description: 'How start-up recovered: the snapshot it began from, log records replayed, counts.' }),
  snapshots: t.Object({}, { additionalProperties: true, description: 'Snapshot policy state and the log sequence number.' }),
});

export const operationRoutes = (ctx: ServerContext) =>
  new Elysia({ name: 'operations' })
    .get('/health', () => ({ success: true as const, status: 'ok' as const }), {
      detail: { summary: 'The process is up', ...open },
      response: { 200: HealthSchema },
    })
    .get(
      '/metrics',
      async () => {
        const { body, contentType } = await ctx.metrics.render();
        return new Response(body, { headers: { 'content-type': contentType } });
      },
      {
        detail: {
          summary: 'Prometheus metrics (text exposition format)',
          ...open,
          responses: { 200: { description: 'Metrics in the Prometheus text format', content: { 'text/plain': { schema: { type: 'string' }, example: '# TYPE kb_contents gauge\nkb_contents{status="ready"} 42\n' } } } },
        },
      },
    )
    .get(
      '/ready',
      () => {
        const reasons = ctx.notReady();
        const engine = ctx.engine();
        if (reasons.length > 0 || !engine) {
          return json(503, errorBody('NOT_READY', `Not ready: ${reasons.join('; ')}`, reasons.map((r) => ({ path: '/', message: r }))), { 'retry-after': '1' });
        }
        return { success: true as const, status: 'ready' as const, warnings: ctx.modelWarnings, recovery: engine.recovery, snapshots: { ...ctx.snapshotStatus(), logSeq: engine.lastSequence } };
      },
      {
        detail: { summary: 'State recovered and models loaded: the server can serve', ...open },
        response: { 200: ReadySchema, ...errorAnswers(503) },
      },
    );
