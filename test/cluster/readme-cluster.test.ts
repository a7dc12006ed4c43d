// The README's cluster example runs as pasted, in a temporary directory: three NATS servers, three
// nodes (one holding half the shards), an organization and key issued through the admin command,
// a write through node 1 and searches through nodes 2 and 3. Changed only: the ports (free ones
// instead of 4231…, 6231…, 3001…, 9000), s3rver in place of MinIO (its keys), and `bun run` of
// this repository's scripts by path, since the example runs outside the repository.
import { afterAll, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { eventually } from '../helpers/eventually';
import { startS3, type TestS3 } from '../helpers/s3';

const ROOT = resolve(import.meta.dir, '..', '..');
let s3: TestS3 | undefined;
let group: number | undefined;
const dir = mkdtempSync(join(tmpdir(), 'kb-readme-cluster-'));

afterAll(async () => {
  if (group !== undefined) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {}
  }
  await s3?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const portFree = (port: number) =>
  new Promise<boolean>((done) => {
    const server = createServer();
    server.once('error', () => done(false));
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
  });

/**
 * A base port such that base + each offset is free (the example derives its ports from one base);
 * below the kernel's ephemeral range (32768 on), where an outgoing connection could take a port
 * between this check and the server binding it.
 */
async function freeBase(offsets: number[]): Promise<number> {
  for (;;) {
    const base = 10_000 + Math.floor(Math.random() * 22_000);
    if ((await Promise.all(offsets.map((o) => portFree(base + o)))).every(Boolean)) return base;
  }
}

test('the "Running a cluster" example runs as pasted', async () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = /<!-- cluster-example[^>]*-->\n```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!block) throw new Error('README has no cluster-example block');
  s3 = await startS3();
  const nats = await freeBase([10, 20, 30]);
  const routes = await freeBase([10, 20, 30]);
  const http = await freeBase([1, 2, 3]);
  const replacements: [string, string][] = [
    ['4221', String(nats)],
    ...[1, 2, 3].map((i): [string, string] => [String(4221 + 10 * i), String(nats + 10 * i)]),
    ['6221', String(routes)],
    ...[1, 2, 3].map((i): [string, string] => [String(6221 + 10 * i), String(routes + 10 * i)]),
    ['3000 + i', `${http} + i`],
    ...[1, 2, 3].map((i): [string, string] => [`localhost:${3000 + i}`, `localhost:${http + i}`]),
    ['127.0.0.1:9000', `127.0.0.1:${s3.port}`],
    ['minioadmin', 'S3RVER'],
    ['bun run start', `bun ${join(ROOT, 'src/main.ts')}`],
    ['bun run admin', `bun ${join(ROOT, 'src/admin.ts')}`],
  ];
  let script = block;
  for (const [from, to] of replacements) {
    expect(script).toContain(from);
    script = script.split(from).join(to);
  }
  // setsid: the script and everything it starts in the background share one process group,
  // killed after the test.
  const run = Bun.spawn(['setsid', 'sh', '-c', script], { cwd: dir, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, LOG_LEVEL: 'warn' } });
  group = run.pid;
  const stdout = new Response(run.stdout).text();
  const stderr = new Response(run.stderr).text();
  // The script ends after its last curl; the servers it started hold its output open until they
  // are stopped too.
  const exit = await Promise.race([run.exited, Bun.sleep(150_000).then(() => 'timed out')]);
  // Node 3 lists the three nodes among the live ones (heartbeats each second; on a loaded machine
  // its view may trail the script's last line by a beat or two).
  const live =
    exit === 0
      ? await eventually(
          'three live nodes seen by node 3',
          async () => (await (await fetch(`http://localhost:${http + 3}/ready`)).json()) as { cluster: { liveNodeCount: number } },
          (r) => r.cluster.liveNodeCount === 3,
          15_000,
        )
      : undefined;
  process.kill(-group, 'SIGKILL');
  group = undefined;
  const answers = (await stdout)
    .split('\n')
    .filter((line) => line.startsWith('{"success"'))
    .map((line) => JSON.parse(line));
  const context = `stdout:\n${(await stdout).slice(-3000)}\nstderr:\n${(await stderr).slice(-3000)}`;
  expect(exit, context).toBe(0);
  expect(answers.length, context).toBe(4);
  const [created, viaNode2, viaNode3, ready] = answers;
  expect(created).toMatchObject({ success: true, data: { status: 'ready' } });
  for (const search of [viaNode2, viaNode3])
    expect(search?.data?.[0]?.contentChunk, `${JSON.stringify(search)}\n${context}`).toBe('Refunds are issued within 14 days.');
  expect(ready.status).toBe('ready');
  expect(ready.cluster).toMatchObject({ nodeId: 'node-3', shards: { count: 4, held: [0, 1] } });
  expect(live!.cluster.liveNodeCount).toBe(3);
}, 180_000);
