// Snapshot worker thread: builds one snapshot per request (see build.ts), or checks the files a
// restart from item dumps does not read (verify.ts).
import { buildSnapshot, placeIncrementalParts, type BuildRequest, type BuildResult, type PartsResult } from './build';
import { verifyFiles, type VerifyRequest, type VerifyResult } from './verify';

declare const self: Worker;

type Request = (BuildRequest | { verify: VerifyRequest } | { placeParts: BuildRequest }) & { jobId: number };

self.onmessage = async (event: MessageEvent<Request>) => {
  const { jobId, ...req } = event.data;
  try {
    let value: VerifyResult | BuildResult | PartsResult;
    const phases: Record<string, number> = {};
    if ('verify' in req) value = verifyFiles(req.verify);
    else if ('placeParts' in req) value = { parts: await placeIncrementalParts(req.placeParts, phases), phases };
    else value = { manifest: await buildSnapshot(req, phases), phases };
    self.postMessage({ jobId, ok: true, value });
  } catch (err) {
    self.postMessage({ jobId, ok: false, error: err instanceof Error ? err.message : String(err) });
  }
};
