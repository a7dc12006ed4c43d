// Re-embedding a knowledge base on demand: it moves to the configuration its type gets now (the
// model the operator serves it with, and that model's chunking). The same happens by itself at
// start-up unless REEMBED_ON_START=false. Searches answer from the old configuration meanwhile.
import { Elysia, t } from 'elysia';
import type { ServerContext } from '../http/context';
import { orgContext } from '../http/auth';
import { API_ERRORS, errorAnswers } from '../schemas/common';
import { configForType, type KbType } from '../kb-types';
import { requireEngine } from './guards';

const count = t.Integer({ minimum: 0 });

/** Where a knowledge base's re-embedding stands (its read carries it too, as `reembedding`). */
export const ReembedProgressSchema = t.Object(
  {
    configurationId: t.String({ description: 'The configuration being built; activeKnowledgeBaseConfigurationId becomes this once every item is built.' }),
    model: t.String({ description: 'Its embedding model.' }),
    done: count,
    total: count,
    chunksPerSecond: t.Number({ minimum: 0, description: 'Chunks built per second over the last minute.' }),
    etaSeconds: t.Union([count, t.Null()], { description: 'Seconds until complete at that pace; null before there is a pace.' }),
    startedAt: t.String({ format: 'date-time' }),
  },
  {
    description:
      'Re-embedding under way: items whose newest version is built for the new configuration, of all items. Searches answer from the active configuration until it is complete.',
  },
);

const ReembedAnswer = t.Object({
  success: t.Literal(true),
  data: t.Object({
    status: t.Union([t.Literal('started'), t.Literal('running'), t.Literal('current')], {
      description:
        'started: a build of the configuration the type gets now began; running: it was under way already; current: the knowledge base indexes that way already (nothing to do; a build of another configuration, if any, was cancelled).',
    }),
    activeKnowledgeBaseConfigurationId: t.String(),
    reembedding: t.Union([ReembedProgressSchema, t.Null()]),
  }),
});

export const reembedRoutes = (ctx: ServerContext) =>
  new Elysia({ name: 'reembed' }).use(orgContext).post(
    '/knowledge-bases/:id/reembed',
    async ({ org, params }) => {
      const engine = requireEngine(ctx);
      const kb = engine.getKnowledgeBase(org, params.id);
      const status = await engine.reembed(org, params.id, configForType(kb.type as KbType, ctx.config, ctx.embeddings));
      return {
        success: true as const,
        data: {
          status,
          activeKnowledgeBaseConfigurationId: engine.getKnowledgeBase(org, params.id).config.id,
          reembedding: engine.reembedProgress(org, params.id) ?? null,
        },
      };
    },
    {
      detail: {
        summary: 'Re-embed with the model the type is served by now',
        description:
          'Builds a new configuration of the knowledge base (the embedding model and chunking its type gets now) from every item, in the background: its status and progress, which the knowledge base read also carries as `reembedding`. Searches answer from the active configuration, with no error and no mixed vectors, until every item is built; then activeKnowledgeBaseConfigurationId switches at once. Writes meanwhile are indexed for both. Status `current` when there is nothing to do. The server does this by itself at start-up for every knowledge base whose model changed, unless REEMBED_ON_START=false.',
        tags: ['Knowledge bases'],
      },
      response: { 200: ReembedAnswer, ...errorAnswers(...API_ERRORS, 404) },
    },
  );
