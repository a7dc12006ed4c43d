// The real extraction worker, plus two misbehaviours the pool tests ask for by file name:
// `hang.txt` spins forever (a parser stuck in a loop), `crash.txt` kills the thread.
import '../../engine/extract/worker';
import type { ExtractRequest } from '../../engine/extract/protocol';

declare const self: Worker;

const real = self.onmessage!;
self.onmessage = (event: MessageEvent<ExtractRequest>) => {
  if (event.data.fileName === 'hang.txt') {
    for (;;) {
      // busy forever: only terminate() ends this
    }
  }
  if (event.data.fileName === 'crash.txt') {
    setTimeout(() => {
      throw new Error('simulated parser crash');
    });
    return;
  }
  return real.call(self, event);
};
