import { Elysia, t } from 'elysia';
import type { ServerContext } from '../http/context';
import { orgContext } from '../http/auth';
import { API_ERRORS, ContentCreatedSchema, errorAnswers } from '../schemas/common';
import type { UploadService } from '../uploads';
import { parseWait } from './contents';
import { requireEngine } from './guards';

export const uploadRoutes = (ctx: ServerContext, uploads: UploadService) =>
  new Elysia({ name: 'uploads' }).use(orgContext).post(
    '/knowledge-bases/:id/contents/file',
    async ({ org, params, query, request, set }) => {
      const wait = parseWait(query.wait);
      const engine = requireEngine(ctx);
      const item = await uploads.upload(engine, org, params.id, request);
      set.status = 201;
      if (!wait) return { success: true as const, data: { id: item.id } };
      await engine.waitForContent(item, ctx.config.waitTimeoutMs);
      return { success: true as const, data: { id: item.id, status: item.status } };
    },
    {
      query: t.Object({ wait: t.Optional(t.String()) }),
      detail: {
        summary: 'Add content from a file',
        description:
          'multipart/form-data with a part `file` (text, Markdown, HTML, PDF, DOCX, CSV, JSON; PNG, JPEG, WebP, TIFF read by OCR in TEXT_AND_MEDIA_HIGH_QUALITY knowledge bases) and an optional field `metadata` holding a JSON object. The type is decided from the bytes. 400 UNSUPPORTED_FILE_TYPE, EMPTY_FILE, NO_TEXT_EXTRACTED; 413 over MAX_FILE_BYTES (default 50 MiB), MAX_FILE_PAGES or MAX_TEXT_BYTES of text, or an image whose OCR runs past its budget (OCR_TIMEOUT_MS, default 30 s: send a smaller or cleaner image); 502 EXTRACTION_FAILED when the parser fails or runs past EXTRACTION_TIMEOUT_MS. Text formats are read in workers of their own, never behind PDFs, DOCX or images; organizations share the workers fairly.',
        tags: ['Contents'],
        requestBody: {
          required: true,
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                required: ['file'],
                properties: {
                  file: { type: 'string', format: 'binary' },
                  metadata: { type: 'string', description: "JSON object, validated like the text route's metadata" },
                },
              },
            },
          },
        },
      },
      response: { 201: ContentCreatedSchema, ...errorAnswers(...API_ERRORS, 400, 403, 404, 408, 413, 502) },
    },
  );
