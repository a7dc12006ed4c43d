import { createWorker, OEM } from 'tesseract.js';
import { createRequire } from 'node:module';
declare const self: Worker;
const require = createRequire(import.meta.url);
const dataDir = require.resolve('@tesseract.js-data/eng/package.json').replace(/package\.json$/, '4.0.0_best_int');
self.onmessage = async (e) => {
  try {
    let t = performance.now();
    const w = await createWorker('eng', OEM.LSTM_ONLY, { langPath: dataDir, cacheMethod: 'none' });
    const init = performance.now() - t; t = performance.now();
    const r = await w.recognize(new Uint8Array(e.data));
    self.postMessage({ init, rec: performance.now() - t, text: r.data.text });
  } catch (err) { self.postMessage({ err: String(err) }); }
};
