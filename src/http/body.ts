// Request bodies of the JSON routes: read with a byte limit that holds for chunked bodies too (the
// Content-Length check in app.ts only covers declared sizes), and parsed as JSON whatever the
// Content-Type says, so `curl -d '{…}'` works and a form-encoded body is rejected as bad JSON.
import { ApiError } from '../errors';

export async function readBodyLimited(request: Request, limit: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array(0);
  // A declared length within the limit (larger ones got 413 before routing): the server delivers
  // exactly that many bytes, so the body can be taken in one piece.
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) <= limit) return new Uint8Array(await request.arrayBuffer());
  const reader = request.body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw new ApiError('PAYLOAD_TOO_LARGE', `The request body is larger than the limit of ${limit} bytes`);
    }
    parts.push(value);
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/** No request body of this API nests deeper than 3; this bound leaves room and stops the hostile. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether JSON text nests arrays and objects deeper than `max`. Brackets inside strings do not
 * count (strings are skipped with native indexOf, so a 10 MiB text costs a few milliseconds).
 * Checked before parsing: a body nested 100k deep would otherwise reach validation, whose error
 * path stringifies it recursively (stack overflow, seconds of a blocked event loop).
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Jump to the closing quote: the next one not escaped by an odd run of backslashes.
      let end = i;
      for (;;) {
        end = text.indexOf('"', end + 1);
        if (end < 0) return false; // unterminated: not JSON, the parser says so
        let slash = end - 1;
        while (text.charCodeAt(slash) === 0x5c) slash--;
        if ((end - 1 - slash) % 2 === 0) break;
      }
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}

/**
 * Gives every parsed object whose own "toString" is data (`{"toString":1}`) a string conversion.
 * Such an object cannot become a string (`${value}` throws), and the validator's error message
 * is built that way, so a wrong-typed field would answer 500 instead of 400. The conversion is an
 * unlisted symbol: the value still reads, lists and serializes exactly as the client sent it.
 */
export function guardStringConversion(value: unknown): void {
  if (typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) guardStringConversion(item);
    return;
  }
  if (Object.hasOwn(value, 'toString') && typeof (value as { toString: unknown }).toString !== 'function') {
    Object.defineProperty(value, Symbol.toPrimitive, { value: objectText, enumerable: false });
  }
  for (const key in value) guardStringConversion((value as Record<string, unknown>)[key]);
}

function objectText(): string {
  return '[object Object]';
}

/** JSON text → value, refusing hostile nesting before the parser and everything after it sees it. */
export function parseJsonText(text: string, path = '/'): unknown {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    throw new ApiError('VALIDATION_ERROR', `The JSON nests deeper than ${MAX_JSON_DEPTH} levels`, [
      { path, message: `nesting deeper than ${MAX_JSON_DEPTH} levels` },
    ]);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError('INVALID_JSON', path === '/' ? 'The request body is not valid JSON' : `${path.slice(1)} is not valid JSON`);
  }
  // Only text naming the key (plainly or through an escape) can hold such an object.
  if (text.includes('toString') || text.includes('\\u')) guardStringConversion(value);
  return value;
}

export async function parseJsonBody(request: Request, limit: number, receiveMs: number): Promise<unknown> {
  // A form upload sent to a JSON route (most often a file sent to …/contents): say where files go.
  if (/^multipart\/form-data\b/i.test(request.headers.get('content-type') ?? '')) {
    throw new ApiError(
      'INVALID_JSON',
      'This route takes a JSON body, not multipart/form-data; files are uploaded to POST /api/v1/knowledge-bases/{id}/contents/file (a "file" part and an optional "metadata" part)',
      undefined,
      { connection: 'close' },
    );
  }
  const bytes = await receivedWithin(readBodyLimited(request, limit), receiveMs, 'request body');
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  if (text.trim().length === 0) return {};
  return parseJsonText(text);
}

/**
 * `receiving` (a body being read), or 408 REQUEST_TIMEOUT once `ms` have passed: a client that
 * drips its body gets an answer before the listener's own timeout would cut the connection with
 * none. The connection is closed after the answer (the rest of the body is never read).
 */
export async function receivedWithin<T>(receiving: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new ApiError(
            'REQUEST_TIMEOUT',
            `The ${what} was not received within ${Math.round(ms / 100) / 10} s; send it faster or in smaller pieces`,
            undefined,
            { connection: 'close' },
          ),
        ),
      ms,
    );
  });
  // The read fails once the connection closes after the answer: nobody waits for it then.
  receiving.catch(() => {});
  try {
    return await Promise.race([receiving, late]);
  } finally {
    clearTimeout(timer);
  }
}
