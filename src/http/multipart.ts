// Streams a multipart/form-data upload to a temporary file, counting bytes as they arrive, so an
// oversized file is refused (413) without ever being held in memory, and a file part never
// becomes a path (the client's file name is only kept, sanitized, as metadata).
import busboy from 'busboy';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { ApiError, invalid } from '../errors';
import { receivedWithin } from './body';

export interface ReceivedFile {
  path: string;
  fileName: string;
  size: number;
  /** What the client claimed; only a hint (the type is decided from the bytes). */
  declaredType: string;
}

export interface Upload {
  file: ReceivedFile;
  fields: Record<string, string>;
}

export interface UploadLimits {
  maxFileBytes: number;
  /** Largest text field (the `metadata` JSON). */
  maxFieldBytes: number;
  allowedFields: readonly string[];
  /** The whole body must arrive within this long (408 REQUEST_TIMEOUT otherwise). */
  receiveTimeoutMs: number;
}

/**
 * The last path component, at most 255 characters, without control characters and without
 * invisible format characters: a right-to-left override would make "exe.txt" read as "txt.exe",
 * zero-width ones make two names look alike. Lone surrogates go too.
 */
export function sanitizeFileName(name: string | undefined): string {
  const base = (name ?? '').split(/[\\/]/).pop() ?? '';
  const clean = base
    .normalize('NFC')
    .replace(/[\p{Cc}\p{Cf}\p{Cs}]/gu, '')
    .trim()
    .slice(0, 255);
  return clean || 'upload';
}

export async function receiveUpload(request: Request, tmpDir: string, limits: UploadLimits): Promise<Upload> {
  const contentType = request.headers.get('content-type') ?? '';
  if (!contentType.toLowerCase().startsWith('multipart/form-data')) {
    throw invalid('/file', 'the body must be multipart/form-data with a part named "file"');
  }
  if (!request.body) throw invalid('/file', 'a part named "file" is required');
  await mkdir(tmpDir, { recursive: true });
  const tempPath = join(tmpDir, `upload-${crypto.randomUUID()}`);

  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': contentType },
      defParamCharset: 'utf8', // file names as browsers send them (not latin1)
      // Counts one above what we accept: busboy reports a limit when it is reached, and the
      // handlers below name the offending part themselves.
      limits: { fileSize: limits.maxFileBytes, fieldSize: limits.maxFieldBytes, files: 2, fields: limits.allowedFields.length + 1 },
    });
  } catch {
    throw invalid('/file', 'malformed multipart/form-data (missing boundary)');
  }

  const fields: Record<string, string> = {};
  let file: ReceivedFile | undefined;
  let fileDone: Promise<void> = Promise.resolve();
  // Ends the temp file early when the upload fails before its end (the body stopped coming in).
  let endFile = () => {};

  const parsed = new Promise<void>((resolve, reject) => {
    const fail = (err: unknown) => reject(err);
    parser.on('file', (name, stream, info) => {
      if (name !== 'file' || file) {
        stream.resume();
        fail(invalid(`/${name}`, name === 'file' ? 'send exactly one file' : `unknown part '${name}' (expected "file" and optionally "metadata")`));
        return;
      }
      const received: ReceivedFile = { path: tempPath, fileName: sanitizeFileName(info.filename), size: 0, declaredType: info.mimeType };
      file = received;
      const out = createWriteStream(tempPath, { flags: 'wx', mode: 0o600 });
      // Settles once the file is closed, whatever happened: the temp file can then be removed safely.
      fileDone = new Promise<void>((res, rej) => {
        out.on('close', () => res());
        out.on('error', rej);
      });
      fileDone.catch(() => {}); // reported through `parsed` or the await below, never unhandled
      stream.on('data', (chunk: Buffer) => (received.size += chunk.length));
      // End the file after the writes already queued (destroying it mid-write crashed the process).
      endFile = () => {
        stream.unpipe(out);
        stream.resume();
        out.end();
      };
      stream.on('limit', () => {
        fail(new ApiError('PAYLOAD_TOO_LARGE', `The file is larger than the limit of ${limits.maxFileBytes} bytes`));
        endFile();
      });
      stream.pipe(out);
    });
    parser.on('field', (name, value, info) => {
      if (!limits.allowedFields.includes(name)) {
        fail(invalid(`/${name}`, `unknown field '${name}' (expected "file" and optionally "metadata")`));
        return;
      }
      if (info.valueTruncated) {
        fail(invalid(`/${name}`, `at most ${limits.maxFieldBytes} bytes`));
        return;
      }
      fields[name] = value;
    });
    parser.on('filesLimit', () => fail(invalid('/file', 'send exactly one file')));
    parser.on('fieldsLimit', () => fail(invalid('/metadata', 'too many fields')));
    parser.on('error', () => fail(invalid('/file', 'malformed multipart/form-data body')));
    parser.on('close', () => resolve());
  });

  const source = Readable.fromWeb(request.body as never);
  source.on('error', (err) => parser.destroy(err));
  source.pipe(parser);
  try {
    await receivedWithin(parsed, limits.receiveTimeoutMs, 'upload');
    await fileDone;
  } catch (err) {
    source.unpipe(parser);
    source.destroy();
    endFile();
    // Only once the write stream is closed can the file be removed for good.
    await fileDone.catch(() => {});
    await rm(tempPath, { force: true });
    throw err;
  }
  if (!file) throw invalid('/file', 'a part named "file" is required');
  return { file, fields };
}
