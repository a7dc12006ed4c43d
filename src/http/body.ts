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

export async function parseJsonBody(request: Request, limit: number): Promise<unknown> {
  const bytes = await readBodyLimited(request, limit);
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  if (text.trim().length === 0) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError('INVALID_JSON', 'The request body is not valid JSON');
  }
}
