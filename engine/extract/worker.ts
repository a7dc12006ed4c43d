// Extraction worker thread: runs `extractFile` for each request of ExtractionPool, one at a time.
// Anything thrown that is not an ExtractionError becomes EXTRACTION_FAILED with a generic message.
import { ExtractionError, reasonOf } from './errors';
import { extractFile } from './index';
import type { ExtractReply, ExtractRequest } from './protocol';

declare const self: Worker;

self.onmessage = async (event: MessageEvent<ExtractRequest>) => {
  const { jobId, bytes, fileName, options } = event.data;
  let reply: ExtractReply;
  try {
    const value = await extractFile(new Uint8Array(bytes), fileName, options);
    reply = { jobId, ok: true, value };
  } catch (err) {
    const error =
      err instanceof ExtractionError
        ? { code: err.code, message: err.message, ...(err.detail ? { detail: err.detail } : {}) }
        : { code: 'EXTRACTION_FAILED' as const, message: 'The file could not be read.', detail: reasonOf(err) };
    reply = { jobId, ok: false, error };
  }
  self.postMessage(reply);
};
