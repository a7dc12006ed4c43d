// Ingestion/embedding worker thread: answers each request of the pool with { jobId, ok, value }.
import { handle, type WorkerRequest } from './handlers';

declare const self: Worker;

self.onmessage = async (event: MessageEvent<WorkerRequest>) => {
  const req = event.data;
  const jobId = 'jobId' in req ? req.jobId : 0;
  try {
    const { value, transfer } = await handle(req);
    if (req.type !== 'init') self.postMessage({ jobId, ok: true, value }, transfer);
  } catch (err) {
    self.postMessage({ jobId, ok: false, error: err instanceof Error ? err.message : String(err) });
  }
};
