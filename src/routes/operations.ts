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
  reembedding: t.Optional(
    t.Object(
      { knowledgeBases: t.Integer({ minimum: 0 }), done: t.Integer({ minimum: 0 }), total: t.Integer({ minimum: 0 }) },
      {
        description:
          'Present while knowledge bases are re-embedded for the model now serving their type: how many, and their items built so far of all (searches answer from the old configuration meanwhile).',
      },
    ),
  ),
  cluster: t.Optional(
    t.Object(
      {
        nodeId: t.String(),
        appliedSeq: t.Integer({ description: 'The newest log record applied on this node.' }),
        streamSeq: t.Integer({ description: "The newest record in the cluster's log stream." }),
        lag: t.Integer({ description: 'Records not yet applied here; above CLUSTER_MAX_LAG the node answers 503.' }),
        jobsWaiting: t.Integer({ description: 'Indexing jobs queued in the cluster, not yet taken by a node.' }),
        jobsHere: t.Integer({ description: 'Items this node is indexing or has taken to index.' }),
        shards: t.Object(
          { count: t.Integer({ minimum: 1 }), held: t.Array(t.Integer({ minimum: 0 })) },
          { description: 'Knowledge bases hash to `count` shards (CLUSTER_SHARDS); this node holds `held` (NODE_SHARDS).' },
        ),
        liveNodeCount: t.Integer({ minimum: 0, description: 'Nodes announcing themselves alive, this one included.' }),
        liveNodes: t.Optional(
          t.Array(t.Object({ nodeId: t.String(), url: t.String(), shards: t.Array(t.Integer({ minimum: 0 })) }), {
            description:
              'With READY_DETAILS=true only (the answer needs no key): the live nodes, where they answer and the shards they hold; requests about knowledge bases of shards not held here go to them.',
          }),
        ),
      },
      { description: 'Cluster mode only.' },
    ),
  ),
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
          responses: {
            200: {
              description: 'Metrics in the Prometheus text format',
              content: { 'text/plain': { schema: { type: 'string' }, example: '# TYPE kb_contents gauge\nkb_contents{status="ready"} 42\n' } },
            },
          },
        },
      },
    )
    .get(
      '/ready',
      async () => {
        const reasons = ctx.notReady();
        const engine = ctx.engine();
        let cluster: Record<string, unknown> | undefined;
        if (engine && ctx.config.cluster) {
          // A node far behind the log, or cut off from it, answers stale reads: a load balancer should skip it.
          const status = await engine.replication().catch((err: Error) => void reasons.push(`the cluster's log is unreachable: ${err.message}`));
          if (status && status.lag > ctx.config.cluster.maxLag) reasons.push(`${status.lag} log records behind (CLUSTER_MAX_LAG ${ctx.config.cluster.maxLag})`);
          if (status) {
            // Who answers where is for operators: /ready needs no key, so the addresses are behind READY_DETAILS.
            const { liveNodes, ...rest } = status;
            cluster = { nodeId: ctx.config.cluster.nodeId, ...rest, liveNodeCount: liveNodes.length, ...(ctx.config.readyDetails ? { liveNodes } : {}) };
          }
        }
        if (reasons.length > 0 || !engine) {
          return json(
            503,
            errorBody(
              'NOT_READY',
              `Not ready: ${reasons.join('; ')}`,
              reasons.map((r) => ({ path: '/', message: r })),
            ),
            { 'retry-after': '1' },
          );
        }
        const reembedding = engine.reembedSummary();
        return json(200, {
          success: true,
          status: 'ready',
          warnings: ctx.modelWarnings,
          recovery: engine.recovery,
          snapshots: { ...ctx.snapshotStatus(), logSeq: engine.lastSequence },
          ...(reembedding.knowledgeBases > 0 ? { reembedding } : {}),
          ...(cluster ? { cluster } : {}),
        });
      },
      {
        detail: { summary: 'State recovered and models loaded: the server can serve', ...open },
        response: { 200: ReadySchema, ...errorAnswers(503) },
      },
    );
