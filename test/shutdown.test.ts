// Graceful shutdown: SIGTERM lets an in-flight request finish, refuses new work, flushes the log
// and exits 0; everything acknowledged is there after the next start.
import { afterAll, expect, test } from 'bun:test';
import { createKb, TestServer } from './helpers/server';

const servers: TestServer[] = [];
afterAll(() => servers.forEach((s) => s.cleanup()));

test('SIGTERM drains an in-flight request and exits 0; its write survives', async () => {
  const a = await TestServer.start();
  servers.push(a);
  const kb = await createKb(a);
  // A request that takes a while: a long text indexed with ?wait=true.
  const long = Array.from({ length: 400 }, (_, i) => `Sentence ${i} talks about lighthouses and ships.`).join(' ');
  const inFlight = a.api('POST', `/api/v1/knowledge-bases/${kb}/contents?wait=true`, { text: long });
  await Bun.sleep(50);
  a.proc.kill('SIGTERM');
  const res = await inFlight;
  expect(res.status).toBe(201);
  expect(await a.proc.exited).toBe(0);
  expect(a.output.some((l) => l.includes('"msg":"stopped"'))).toBe(true);

  const b = await TestServer.start({ dataDir: a.dataDir });
  servers.push(b);
  const item = await b.api('GET', `/api/v1/knowledge-bases/${kb}/contents/${res.body.data.id}`);
  expect(item.status).toBe(200);
  expect(item.body.data.contentChunk).toBe(long);
  await b.stop();
}, 60_000);
