// Snapshot worker thread: builds one snapshot per request (see build.ts), or checks the files a
// restart from item dumps does not read (verify.ts).
import { buildSnapshot, type BuildRequest } from './build';
import { verifyFiles, type VerifyRequest } from './verify';

declare const self: Worker;

type Request = (BuildRequest | { verify: VerifyRequest }) & { jobId: number };

self.onmessage = async (event: MessageEvent<Request>) => {
  const { jobId, ...req } = event.data;
  try {
    const value = 'verify' in req ? verifyFiles(req.verify) : await buildSnapshot(req);
    self.postMessage({ jobId, ok: true, value });
  } catch (err) {
    self.postMessage({ jobId, ok: false, error: err instanceof Error ? err.message : String(err) });
  }
};
