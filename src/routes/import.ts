// Bulk import, POST /api/v1/knowledge-bases/{id}/contents/import: JSON Lines (application/x-ndjson),
// one item a line, each line the body of a single create ({ "text": …, "metadata": … }). The body is
// read as a stream and each line is validated as it arrives (the raw body is never held whole), and
// the import is all or nothing: a bad line answers 400 naming it (details path /lines/<n>/…) and
// nothing is written; over MAX_IMPORT_BYTES or MAX_IMPORT_LINES answers 413 and nothing is written;
// over the organization's content quota answers 403 and nothing is written. Otherwise every item is
// logged as one durable batch (one write and one fsync of the write-ahead log) and the answer, 201
// with the ids in line order, comes once the whole batch is durable — as durable as single writes.
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { Type } from '@sinclair/typebox';
import { Elysia, t } from 'elysia';
import type { ContentItem, Metadata } from '../../engine';
import { ApiError, type ErrorDetail } from '../errors';
import { parseJsonText, receivedWithin } from '../http/body';
import type { ServerContext } from '../http/context';
import { orgContext } from '../http/auth';
import { validationError } from '../http/validation';
import { API_ERRORS, checkMetadata, errorAnswers } from '../schemas/common';
import { checkText, parseWait, TextBody } from './contents';
import { requireEngine } from './guards';

const lineSchema = TypeCompiler.Compile(TextBody);

export interface ImportLimits {
  maxBytes: number;
  maxLines: number;
  maxTextBytes: number;
}

/** An error of one line: its paths under /lines/<n>, its message led by the line number. */
function atLine(err: unknown, line: number): unknown {
  if (!(err instanceof ApiError)) return err;
  const details: ErrorDetail[] | undefined = err.details?.map((d) => ({ path: `/lines/${line}${d.path === '/' ? '' : d.path}`, message: d.message }));
  return new ApiError(err.code, `line ${line}: ${err.message}`, details ?? [{ path: `/lines/${line}`, message: err.message }], err.headers);
}

/** One line's item, validated exactly as the single create's body is (schema, text, metadata). */
function parseLine(text: string, line: number, maxTextBytes: number): { text: string; metadata?: Metadata } {
  try {
    const value = parseJsonText(text, '/');
    if (!lineSchema.Check(value)) throw validationError({ all: [...lineSchema.Errors(value)] as never }, 'item');
    checkText(value.text, maxTextBytes);
    checkMetadata(value.metadata as Metadata | undefined);
    return value.metadata === undefined ? { text: value.text } : { text: value.text, metadata: value.metadata as Metadata };
  } catch (err) {
    if (err instanceof ApiError && err.code === 'INVALID_JSON') {
      throw new ApiError('INVALID_JSON', `line ${line} is not valid JSON`, [{ path: `/lines/${line}`, message: 'not valid JSON' }]);
    }
    throw atLine(err, line);
  }
}

/**
 * Read the body line by line (\n or \r\n; blank lines skipped but counted) into validated items.
 * Throws at the first bad line, or 413 past the limits, having read no further.
 */
export async function readImport(body: ReadableStream<Uint8Array> | null, limits: ImportLimits): Promise<{ text: string; metadata?: Metadata }[]> {
  const items: { text: string; metadata?: Metadata }[] = [];
  if (!body) return items;
  const reader = body.getReader();
  const decoder = new TextDecoder('utf-8', { fatal: false });
  let pending = '';
  let bytes = 0;
  let line = 0;
  const take = (raw: string) => {
    line++;
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (text.trim().length === 0) return;
    if (items.length >= limits.maxLines) {
      throw new ApiError('PAYLOAD_TOO_LARGE', `The import has more than ${limits.maxLines} items (MAX_IMPORT_LINES); send the rest in another request`, [
        { path: `/lines/${line}`, message: `at most ${limits.maxLines} items per import` },
      ]);
    }
    items.push(parseLine(text, line, limits.maxTextBytes));
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.length;
      if (bytes > limits.maxBytes) {
        throw new ApiError('PAYLOAD_TOO_LARGE', `The import body is larger than the limit of ${limits.maxBytes} bytes (MAX_IMPORT_BYTES); send it in parts`, [
          { path: `/lines/${line + 1}`, message: `the body passes ${limits.maxBytes} bytes here` },
        ]);
      }
      // Only the new text is searched for line ends: a long line arriving in many reads stays linear.
      const scanned = pending.length;
      pending += decoder.decode(value, { stream: true });
      let from = 0;
      for (let at = pending.indexOf('\n', scanned); at >= 0; at = pending.indexOf('\n', from)) {
        take(pending.slice(from, at));
        from = at + 1;
      }
      pending = pending.slice(from);
    }
    pending += decoder.decode();
    if (pending.length > 0) take(pending);
  } catch (err) {
    await reader.cancel().catch(() => {});
    throw err;
  }
  if (items.length === 0)
    throw new ApiError('VALIDATION_ERROR', 'The import holds no items: send one JSON object a line', [{ path: '/lines', message: 'no items' }]);
  return items;
}

const ImportAnswer = t.Object({
  success: t.Literal(true),
  data: t.Object({
    ids: t.Array(t.String(), { description: 'The new items, in the order of their lines.' }),
    count: Type.Integer({ minimum: 1 }),
    ready: t.Optional(Type.Integer({ minimum: 0, description: 'With ?wait=true: items ready when the answer was sent.' })),
    failed: t.Optional(Type.Integer({ minimum: 0, description: 'With ?wait=true: items whose indexing failed.' })),
    pending: t.Optional(Type.Integer({ minimum: 0, description: 'With ?wait=true: items still pending or processing (the wait timed out).' })),
  }),
});

export const importRoutes = (ctx: ServerContext) =>
  new Elysia({ name: 'import' }).use(orgContext).post(
    '/knowledge-bases/:id/contents/import',
    async ({ org, params, query, request, set }) => {
      const wait = parseWait(query.wait);
      const engine = requireEngine(ctx);
      // Before the body is read: an absent knowledge base is a 404, and in a cluster a node that
      // does not hold its content forwards the body unread to one that does (src/app.ts).
      engine.heldKnowledgeBase(org, params.id);
      const { limits } = ctx.config;
      const items = await receivedWithin(
        readImport(request.body, { maxBytes: limits.maxImportBytes, maxLines: limits.maxImportLines, maxTextBytes: limits.maxTextBytes }),
        limits.uploadReceiveMs,
        'import body',
      );
      const ids = await engine.importContents(org, params.id, items);
      set.status = 201;
      if (!wait) return { success: true as const, data: { ids, count: ids.length } };
      const deadline = Date.now() + ctx.config.waitTimeoutMs;
      let ready = 0;
      let failed = 0;
      for (const id of ids) {
        let item: ContentItem;
        try {
          item = engine.getContent(org, params.id, id);
        } catch {
          continue; // deleted meanwhile
        }
        await engine.waitForContent(item, Math.max(0, deadline - Date.now()));
        if (item.status === 'ready') ready++;
        else if (item.status === 'failed') failed++;
      }
      return { success: true as const, data: { ids, count: ids.length, ready, failed, pending: ids.length - ready - failed } };
    },
    {
      query: t.Object({
        wait: t.Optional(t.String({ description: '`true`: answer once every item is ready or failed (bounded by WAIT_TIMEOUT_MS; then see `pending`).' })),
      }),
      detail: {
        summary: 'Import many content items from JSON Lines (one durable batch)',
        description:
          'Body: `application/x-ndjson`, one JSON object a line, each like the body of `POST …/contents` (`text`, optional `metadata`); blank lines are skipped. ' +
          'All or nothing: a bad line answers 400 naming it (`details[].path` is `/lines/<line number>/<field>`, the message starts with `line <n>:`) and nothing is written; ' +
          'more than MAX_IMPORT_LINES items (default 10,000) or MAX_IMPORT_BYTES (default 32 MiB) answers 413 and nothing is written; ' +
          "items beyond the organization's content quota answer 403 and nothing is written. Otherwise every item is logged in one batch (one write and one fsync of the write-ahead log) " +
          'and the 201 comes once all of them are durable, as for single writes; indexing follows in the background (`?wait=true` waits for it). Send larger files in several requests (the CLI does: `kb-search import`).',
        tags: ['Contents'],
        requestBody: {
          required: true,
          content: {
            'application/x-ndjson': {
              schema: {
                type: 'string',
                description: 'JSON Lines: one `{ "text": string, "metadata"?: object }` a line.',
                examples: [
                  '{"text":"Refunds are issued within 14 days.","metadata":{"team":"billing"}}\n{"text":"Passwords are reset from the account page."}\n',
                ],
              },
            },
          },
        },
      },
      response: { 201: ImportAnswer, ...errorAnswers(...API_ERRORS, 400, 403, 404, 408, 413) },
    },
  );
