import { readdirSync } from 'node:fs';
const threads = () => readdirSync('/proc/self/task').length;
const rss = () => Math.round(process.memoryUsage().rss / 1e6);
console.log('start', threads(), rss());
for (let i = 0; i < 4; i++) {
  const png = await Bun.file('/tmp/exp/t.png').arrayBuffer();
  const w = new Worker(new URL('./w.ts', import.meta.url));
  await new Promise<void>((res) => { w.onmessage = () => res(); w.postMessage(png, [png]); });
  console.log('loaded', threads(), rss());
  w.terminate();
  await Bun.sleep(1000);
  Bun.gc(true);
  console.log('after terminate', threads(), rss());
}
process.exit(0);
