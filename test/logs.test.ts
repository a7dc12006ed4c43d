// Logs a person reads: on a terminal one readable line per event (the server run in a
// pseudo-terminal by util-linux `script`), JSON lines otherwise (LOG_FORMAT chooses either way),
// and probes (/health, /ready, /metrics) only at debug, so a start script polling /ready does not
// fill the log.
import { afterAll, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { prettyLine } from '../src/logger';
import { KEY, ORG, TestServer } from './helpers/server';

const ROOT = join(import.meta.dir, '..');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('prettyLine: time, level, message, then the fields', () => {
  expect(prettyLine('{"level":30,"time":"2026-11-26T01:02:03.456Z","msg":"listening","port":3000,"host":"0.0.0.0"}')).toBe(
    '01:02:03 INFO  listening port=3000 host=0.0.0.0',
  );
  expect(prettyLine('{"level":40,"time":"2026-11-26T01:02:03.456Z","msg":"slow","err":"a b","n":{"x":1}}')).toBe('01:02:03 WARN  slow err="a b" n={"x":1}');
  expect(prettyLine('not json\n')).toBe('not json');
});

test('on a terminal: readable lines; probes are not logged, other requests are', async () => {
  const dataDir = TestServer.tempDir();
  dirs.push(dataDir);
  // `script` gives the server a pseudo-terminal as stdout: no LOG_FORMAT, so the terminal decides.
  const proc = Bun.spawn(['script', '-qfec', `bun ${join(ROOT, 'src/main.ts')}`, '/dev/null'], {
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      KB_API_KEYS: `${ORG}:${KEY}`,
      INGEST_WORKERS: '1',
      LOG_LEVEL: 'info',
      LOG_FORMAT: '',
    },
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  let text = '';
  const reading = (async () => {
    for await (const part of proc.stdout) text += new TextDecoder().decode(part);
  })();
  try {
    let port = 0;
    for (let i = 0; i < 600 && !port; i++) {
      port = Number(/INFO {2}listening port=(\d+)/.exec(text)?.[1] ?? 0);
      if (!port) await Bun.sleep(100);
    }
    expect(port).toBeGreaterThan(0);
    const url = `http://127.0.0.1:${port}`;
    let ready = 0;
    for (let i = 0; i < 600 && ready !== 200; i++) {
      ready = (await fetch(`${url}/ready`)).status;
      if (ready !== 200) await Bun.sleep(100);
    }
    for (let i = 0; i < 5; i++) await fetch(`${url}/health`);
    const listed = await fetch(`${url}/api/v1/knowledge-bases`, { headers: { 'x-service-organization-id': ORG, 'x-service-api-key': KEY } });
    expect(listed.status).toBe(200);
    for (let i = 0; i < 50 && !text.includes('route=/api/v1/knowledge-bases'); i++) await Bun.sleep(100);
    const lines = text.split(/\r?\n/).filter((l) => l.trim());
    expect(lines.some((l) => /^\d\d:\d\d:\d\d INFO {2}request .*method=GET route=\/api\/v1\/knowledge-bases status=200/.test(l))).toBe(true);
    expect(lines.some((l) => l.includes('route=/ready') || l.includes('route=/health'))).toBe(false);
    expect(lines.some((l) => l.trimStart().startsWith('{'))).toBe(false);
  } finally {
    proc.kill('SIGKILL');
    await reading.catch(() => {});
  }
}, 120_000);

test('not a terminal: JSON lines, as before; LOG_FORMAT=pretty asks for readable ones; a wrong value stops the start', async () => {
  const json = await TestServer.start();
  dirs.push(json.dataDir);
  await fetch(`${json.url}/health`);
  expect(json.output.some((l) => l.startsWith('{') && l.includes('"msg":"listening"'))).toBe(true);
  await json.stop();

  const prettyDir = TestServer.tempDir();
  dirs.push(prettyDir);
  const pretty = Bun.spawn(['bun', join(ROOT, 'src/main.ts')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: prettyDir, LOG_FORMAT: 'pretty', INGEST_WORKERS: '1' },
    stdout: 'pipe',
    stderr: 'ignore',
  });
  let out = '';
  try {
    for await (const part of pretty.stdout) {
      out += new TextDecoder().decode(part);
      if (out.includes('listening')) break;
    }
    expect(out).toMatch(/^\d\d:\d\d:\d\d INFO {2}listening port=\d+/m);
  } finally {
    pretty.kill('SIGKILL');
  }

  const bad = Bun.spawnSync(['bun', join(ROOT, 'src/main.ts')], { env: { ...process.env, PORT: '0', DATA_DIR: TestServer.tempDir(), LOG_FORMAT: 'fancy' } });
  expect(bad.exitCode).toBe(1);
  expect(bad.stdout.toString() + bad.stderr.toString()).toContain('LOG_FORMAT must be pretty or json; got "fancy"');
}, 120_000);
