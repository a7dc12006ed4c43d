// The embeddings stub of bench/snapshot.ts, run as a child process (`bun bench/snapshot.ts --stub`)
// so its CPU and memory stay out of the measured process. Its vectors are hashEmbed's plus 0.3 of
// noise seeded by the whole text: the replicated abstracts differ only by their tag, and would
// otherwise collapse onto near-identical vectors.
import { join } from 'node:path';
import { hashEmbedWithTextNoise, startHashEmbedder } from '../lib/hash-embed';

export const TEXT_NOISE = 0.3;

/** Child side: serve the vectors, print {"port":…}, run until the parent kills it or closes stdin. */
export function runStub(): void {
  const embedder = startHashEmbedder((text) => hashEmbedWithTextNoise(text, TEXT_NOISE));
  console.log(JSON.stringify({ port: embedder.port }));
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
}

/** Parent side: start the child and wait for its port. */
export async function spawnStub(): Promise<{ url: string; stop: () => Promise<void> }> {
  const stub = Bun.spawn(['bun', join(import.meta.dir, '..', 'snapshot.ts'), '--stub'], { stdout: 'pipe', stderr: 'inherit', stdin: 'pipe' });
  const reader = stub.stdout.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let port = 0;
  while (!port) {
    const { done, value } = await reader.read();
    if (done) throw new Error('embedding stub exited before listening');
    buf += decoder.decode(value, { stream: true });
    const m = /"port":(\d+)/.exec(buf);
    if (m) port = Number(m[1]);
  }
  // Drained for its whole life, so it never blocks on a full pipe.
  void (async () => {
    while (!(await reader.read()).done);
  })();
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      stub.kill();
      await stub.exited;
    },
  };
}
