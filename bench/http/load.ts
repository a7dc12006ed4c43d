// Load generation against the server: autocannon, and wrk when it is installed (on 2 cores
// autocannon, being JavaScript, can saturate before the server does).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { cpuSecondsOf } from '../lib/cpu';
import type { Server } from '../lib/server';
import { summarize, type Latency } from '../lib/stats';
import { headers } from './auth';

export interface Run {
  route: string;
  connections: number;
  tool: 'autocannon' | 'wrk';
  requestsPerSecond: number;
  latency: Latency;
  ok: number;
  errors: number;
  non2xx: number;
  seconds: number;
  /** CPU of the server process over the run, in cores (1.0 = one core busy). */
  serverCores: number;
  /** CPU of this process (the load generator) over the run, in cores. */
  clientCores: number;
}

export interface Target {
  route: string;
  method: 'GET' | 'POST';
  path: string;
  bodies?: string[];
  /** Or the body of the i-th request, made when sent (large loads: a million bodies are not held at once). */
  bodyAt?: (i: number) => string;
}

export async function cannon(
  server: Server,
  target: Target,
  connections: number,
  opts: { duration: number; amount?: undefined; record?: boolean } | { amount: number; duration?: undefined; record?: boolean },
): Promise<Run> {
  let next = 0;
  const samples: number[] = [];
  let ok = 0;
  let non2xx = 0;
  const bodies = target.bodies;
  const bodyAt = target.bodyAt ?? (bodies ? (i: number) => bodies[i % bodies.length]! : undefined);
  const request: autocannon.Request = {
    method: target.method,
    path: target.path,
    headers: target.method === 'POST' ? headers : {},
    ...(bodyAt ? { setupRequest: (req: autocannon.Request) => ({ ...req, body: bodyAt(next++) }) } : {}),
  };
  const cpu0 = cpuSecondsOf(server.pid);
  const self0 = cpuSecondsOf('self');
  const t0 = performance.now();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: server.base,
        connections,
        ...(opts.amount ? { amount: opts.amount } : { duration: opts.duration }),
        requests: [request],
        timeout: 30,
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
    instance.on('response', (_client, status, _bytes, ms) => {
      if (status >= 200 && status < 300) {
        ok++;
        if (opts.record !== false) samples.push(ms);
      } else non2xx++;
    });
  });
  const seconds = (performance.now() - t0) / 1000;
  return {
    route: target.route,
    connections,
    tool: 'autocannon',
    requestsPerSecond: ok / seconds,
    latency: summarize(samples),
    ok,
    errors: result.errors + result.timeouts,
    non2xx,
    seconds,
    serverCores: (cpuSecondsOf(server.pid) - cpu0) / seconds,
    clientCores: (cpuSecondsOf('self') - self0) / seconds,
  };
}

const luaString = (s: string) => `[==[${s}]==]`;

function wrkUnitMs(value: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(value.trim());
  if (!m) return NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : n * 60_000;
}

export async function wrk(server: Server, target: Target, connections: number, seconds: number): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'kb-wrk-'));
  const script = join(dir, 'script.lua');
  const lines = [`wrk.method = "${target.method}"`];
  if (target.method === 'POST') for (const [k, v] of Object.entries(headers)) lines.push(`wrk.headers["${k}"] = "${v}"`);
  if (target.bodies) {
    lines.push(`local bodies = {${target.bodies.map(luaString).join(',\n')}}`, 'local n = #bodies', 'local i = 0');
    lines.push('request = function()', '  i = i % n + 1', '  return wrk.format(nil, nil, nil, bodies[i])', 'end');
  }
  writeFileSync(script, `${lines.join('\n')}\n`);
  const cpu0 = cpuSecondsOf(server.pid);
  const t0 = performance.now();
  const proc = Bun.spawn([Bun.which('wrk')!, '-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, `${server.base}${target.path}`], {
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const wall = (performance.now() - t0) / 1000;
  rmSync(dir, { recursive: true, force: true });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const total = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const pctl = (p: string) => wrkUnitMs(new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out)?.[1] ?? '');
  const mean = wrkUnitMs(/Latency\s+(\S+)/.exec(out)?.[1] ?? '');
  return {
    route: target.route,
    connections,
    tool: 'wrk',
    requestsPerSecond: rps * (1 - non2xx / Math.max(1, total)),
    latency: { p50: pctl('50'), p95: NaN, p99: pctl('99'), mean, samples: total },
    ok: total - non2xx,
    errors: socketErrors ? socketErrors.slice(1).reduce((s, x) => s + Number(x), 0) : 0,
    non2xx,
    seconds: wall,
    serverCores: (cpuSecondsOf(server.pid) - cpu0) / wall,
    clientCores: NaN,
  };
}
