// File uploads: stream to a temporary file, extract text in the extraction workers (bounded
// concurrency, so memory stays bounded however many uploads arrive at once; text formats and
// PDF/DOCX/images in separate lanes, each shared fairly by organizations: ExtractionLanes), keep
// the original bytes beside the log, then add the content like a text item.
import { Value } from '@sinclair/typebox/value';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Engine, ExtractionLanes, ContentItem, Metadata } from '../engine';
import { ApiError, invalid } from './errors';
import { receiveUpload } from './http/multipart';
import { parseJsonText } from './http/body';
import type { Config } from './config';
import { checkMetadata, MetadataSchema } from './schemas/common';

function parseMetadata(raw: string | undefined): Metadata | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  let value: unknown;
  try {
    value = parseJsonText(raw, '/metadata');
  } catch (err) {
    if (err instanceof ApiError && err.code === 'INVALID_JSON') throw invalid('/metadata', 'must be a JSON object');
    throw err;
  }
  if (!Value.Check(MetadataSchema, value)) {
    const first = [...Value.Errors(MetadataSchema, value)][0];
    const message =
      first?.message === 'Expected union value' ? 'must be a string (up to 1,024 characters), a number, a boolean or an array of strings' : first?.message;
    throw invalid(`/metadata${first?.path ?? ''}`, message ?? 'invalid metadata');
  }
  checkMetadata(value as Metadata);
  return value as Metadata;
}

export class UploadService {
  constructor(
    private readonly config: Config,
    private readonly extraction: ExtractionLanes,
  ) {}

  get tmpDir(): string {
    return join(this.config.dataDir, 'tmp');
  }

  async upload(engine: Engine, org: string, kbId: string, request: Request): Promise<ContentItem> {
    // Where its content is held (in a cluster, elsewhere: SHARD_NOT_HELD, and the body goes on unread).
    const kb = engine.heldKnowledgeBase(org, kbId);
    engine.checkQuota(org, 'contents'); // before reading and extracting the file
    const { file, fields } = await receiveUpload(request, this.tmpDir, {
      maxFileBytes: this.config.limits.maxFileBytes,
      maxFieldBytes: 64 * 1024,
      allowedFields: ['metadata'],
      receiveTimeoutMs: this.config.limits.uploadReceiveMs,
    });
    try {
      const metadata = parseMetadata(fields.metadata);
      if (file.size === 0) throw new ApiError('EMPTY_FILE', 'The file is empty');
      // The file is read only once its lane has a worker for this organization.
      const extracted = await this.extraction.extractFile(org, file.path, file.fileName, {
        allowImages: kb.config.modalities.includes('image'),
        maxPages: this.config.limits.maxFilePages,
        maxChars: this.config.limits.maxTextBytes,
        maxDocxXmlBytes: this.config.extraction.maxDocxXmlBytes,
      });
      // The same byte limit as the text route (extraction counted characters).
      if (Buffer.byteLength(extracted.text, 'utf8') > this.config.limits.maxTextBytes) {
        throw new ApiError('PAYLOAD_TOO_LARGE', `The text extracted from the file is larger than the limit of ${this.config.limits.maxTextBytes} bytes`);
      }
      // The file is kept as the item's original (moved, so nothing is left to remove below).
      const item = await engine.addFileContent(org, kbId, file.path, {
        text: extracted.text,
        metadata,
        source: {
          kind: 'file',
          fileName: file.fileName,
          mediaType: extracted.mediaType,
          size: file.size,
          ...(extracted.pageCount ? { pages: extracted.pageCount } : {}),
        },
        pages: extracted.pages,
      });
      return item;
    } finally {
      await rm(file.path, { force: true });
    }
  }
}
