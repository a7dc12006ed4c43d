// The engine builds HNSW graphs faster while its owner says it is idle (no request in flight), and
// RequestActivity, the server's idea of idle, follows requests in flight.
import { afterEach, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { Engine } from '../../engine';
import { RequestActivity } from '../../src/http/serve';
import { textKbConfig } from '../helpers/kb-config';
import { TestServer } from '../helpers/server';

describe('RequestActivity', () => {
  test('idle only with nothing in flight and a quiet period since the last request', async () => {
    const a = new RequestActivity();
    expect(a.idle(0)).toBe(true);
    a.begin();
    a.begin();
    expect(a.idle(0)).toBe(false);
    a.end();
    expect(a.idle(0)).toBe(false);
    a.end();
    expect(a.idle(50)).toBe(false); // just ended
    await Bun.sleep(60);
    expect(a.idle(50)).toBe(true);
  });
});

describe('background HNSW pace', () => {
  const dirs: string[] = [];
  const engines: Engine[] = [];
  afterEach(async () => {
    for (const e of engines.splice(0)) await e.close().catch(() => {});
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  /** Vectors of `n` items through a stub embedder, then how long the graph takes to catch up. */
  async function catchUpMs(idle: boolean): Promise<number> {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    // A stub OpenAI-compatible embedder: deterministic 128-d vectors.
    const stub = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        const { input } = (await req.json()) as { input: string[] };
        const data = input.map((text, index) => {
          let h = 2166136261;
          const v = Array.from({ length: 128 }, (_, i) => {
            h = Math.imul(h ^ (text.charCodeAt(i % text.length) + i), 16777619);
            return (h >>> 0) / 2 ** 32 - 0.5;
          });
          return { index, embedding: v };
        });
        return Response.json({ data });
      },
    });
    try {
      const e = await Engine.open({
        dataDir: dir,
        compute: { documentWorkers: 1, settings: { http: { url: `http://127.0.0.1:${stub.port}`, timeoutMs: 10_000, retries: 0 } } },
        graphThreshold: 100,
        idle: () => idle,
        log: () => {},
      });
      engines.push(e);
      const kb = await e.createKnowledgeBase('org_pace', {
        name: 'pace',
        description: '',
        type: 'TEXT_HIGH_QUALITY',
        config: textKbConfig({ provider: 'http', model: 'stub', dimensions: 128, metric: 'cosine', quantization: 'f32' }),
      });
      for (let i = 0; i < 3000; i += 250) {
        await Promise.all(Array.from({ length: 250 }, (_, j) => e.addContent('org_pace', kb.id, { text: `item ${i + j} about topic ${(i + j) % 37}` })));
      }
      while (e.stats().queueDepth > 0) await Bun.sleep(10);
      const vectors = e.knowledgeBase(kb.id)!.vectors!;
      const started = performance.now();
      while (!vectors.graphReady) await Bun.sleep(5);
      return performance.now() - started;
    } finally {
      stub.stop(true);
    }
  }

  test('an idle engine catches up with its graph faster than a busy one', async () => {
    const busy = await catchUpMs(false);
    const idle = await catchUpMs(true);
    expect(idle).toBeLessThan(busy * 0.7);
  }, 120_000);
});
