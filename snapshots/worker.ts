// Snapshot worker thread: builds one snapshot per request (see build.ts).
import { buildSnapshot, type BuildRequest } from './build';

declare const self: Worker;

self.onmessage = async (event: MessageEvent<BuildRequest & { jobId: number }>) => {
  const { jobId, ...req } = event.data;
  try {
    self.postMessage({ jobId, ok: true, value: await buildSnapshot(req) });
  } catch (err) {
    self.postMessage({ jobId, ok: false, error: err instanceof Error ? err.message : String(err) });
  }
};
