// bench/semantic/limit.ts's worker thread: one ONNX Runtime session, fed the model calls it is
// given (already tokenized and padded), InferenceSession.run timed alone.
import * as ort from 'onnxruntime-node';
import { readFileSync } from 'node:fs';

declare const self: Worker;

export interface LimitCall {
  dims: [number, number];
  inputIds: BigInt64Array;
  attentionMask: BigInt64Array;
  tokenTypeIds: BigInt64Array;
}

export type LimitRequest = { type: 'load'; file: string; options: ort.InferenceSession.SessionOptions; calls: LimitCall[] } | { type: 'go' };

/** CPU milliseconds of this thread (/proc/thread-self), which runs the kernels with one intra-op thread. */
function threadCpuMs(): number {
  const stat = readFileSync('/proc/thread-self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

let session: ort.InferenceSession | undefined;
let calls: LimitCall[] = [];

function feeds(call: LimitCall): Record<string, ort.Tensor> {
  const all: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', call.inputIds, call.dims),
    attention_mask: new ort.Tensor('int64', call.attentionMask, call.dims),
    token_type_ids: new ort.Tensor('int64', call.tokenTypeIds, call.dims),
  };
  return Object.fromEntries(session!.inputNames.map((n) => [n, all[n]!]));
}

self.onmessage = async (event: MessageEvent<LimitRequest>) => {
  const req = event.data;
  if (req.type === 'load') {
    session = await ort.InferenceSession.create(req.file, req.options);
    calls = req.calls;
    if (calls.length > 0) await session.run(feeds(calls[0]!)); // warm-up
    self.postMessage({ type: 'ready' });
    return;
  }
  const cpu0 = threadCpuMs();
  const t0 = performance.now();
  for (const call of calls) await session!.run(feeds(call));
  self.postMessage({ type: 'done', millis: performance.now() - t0, cpuMillis: threadCpuMs() - cpu0 });
  await session!.release();
};
