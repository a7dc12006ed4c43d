// Ingestion worker thread: receives jobs, answers with processed chunks or an error message.
import { processContent, type ProcessJob } from './process';

declare const self: Worker;

export interface WorkerRequest {
  jobId: number;
  job: ProcessJob;
}

export type WorkerResponse =
  | { jobId: number; ok: true; chunks: ReturnType<typeof processContent> }
  | { jobId: number; ok: false; error: string };

self.onmessage = (event: MessageEvent<WorkerRequest>) => {
  const { jobId, job } = event.data;
  let response: WorkerResponse;
  try {
    response = { jobId, ok: true, chunks: processContent(job) };
  } catch (err) {
    response = { jobId, ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  self.postMessage(response);
};
