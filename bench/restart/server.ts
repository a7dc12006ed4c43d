// The real server on a copy of a data directory holding a snapshot (bench/restart/build-base.ts):
// spawn → /ready (with /ready's recovery), `--tail` items written through HTTP (vectors from the
// hashing stub) and indexed, a graceful shutdown (SIGTERM → exit, the snapshot at shutdown
// included), then spawn → /ready again on what that shutdown left. Peak RSS from /proc (VmHWM), RSS
// once ready (VmRSS, and per chunk), CPU time until ready (every thread; steadier than wall time on
// a shared machine). The tail's texts come from SciFact (SCIFACT_DIR) when present.
//   bun bench/restart/server.ts [--dir .bench-out/restart/base-100000] [--tail 1000] [--cold]
// `--cold`: the kernel's page cache is dropped before each start (as after a reboot: the runtime,
// its modules and every snapshot file are read from disk); needs root (/proc/sys/vm/drop_caches).
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { headers, KEY, ORG } from '../http/auth';
import { loadCorpus, replicaText } from '../lib/corpus';
import { HASH_DIMENSIONS, HASH_MODEL } from '../lib/hash-embed';
import { BENCH_OUT } from '../lib/paths';
import { launchServer, waitFor, type Server } from '../lib/server';
import { spawnStub } from '../snapshot/stub';

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: { dir: { type: 'string' }, tail: { type: 'string', default: '1000' }, cold: { type: 'boolean', default: false } },
});
const base = values.dir ?? join(BENCH_OUT, 'restart', 'base-100000');
const work = `${base}-server`;
rmSync(work, { recursive: true, force: true });
cpSync(base, work, { recursive: true });
// Written back before the first start, as a stopped server's files are: reading a copy whose
// gigabytes are still being written back doubled the first start at 1M (7.0 s against 3.3 s in process).
Bun.spawnSync(['sync']);
const meta = (await Bun.file(join(base, 'bench-meta.json')).json()) as { kbId: string; items: number };
const stub = await spawnStub();
const env = {
  DATA_DIR: work,
  KB_API_KEYS: `${ORG}:${KEY}`,
  RATE_LIMIT_RPS: '0',
  MAX_CONTENTS_PER_ORG: '0',
  HIGH_QUALITY_MODEL: `http:${HASH_MODEL}`,
  COST_EFFECTIVE_MODEL: `http:${HASH_MODEL}`,
  EMBEDDING_HTTP_URL: stub.url,
  EMBEDDING_HTTP_DIMENSIONS: String(HASH_DIMENSIONS),
};
const statusKiB = (s: Server, field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${s.pid}/status`, 'utf8'))![1]);
const peakMiB = (s: Server) => Math.round(statusKiB(s, 'VmHWM') / 1024);

/** The server's log lines as they arrive (info level), with when: the shutdown's steps are read from them. */
const logged: { at: number; msg: string; ms?: number }[] = [];
function onLine(line: string) {
  try {
    const { msg, ms } = JSON.parse(line) as { msg?: string; ms?: number };
    if (msg) logged.push({ at: performance.now(), msg, ...(ms !== undefined ? { ms } : {}) });
  } catch {
    // not a log line
  }
}

/** Written-back pages dropped from the page cache (clean ones only go, hence the sync first). */
function dropPageCache(): void {
  Bun.spawnSync(['sync']);
  try {
    writeFileSync('/proc/sys/vm/drop_caches', '1');
  } catch (err) {
    throw new Error(`--cold needs root: writing /proc/sys/vm/drop_caches failed (${err instanceof Error ? err.message : err})`);
  }
}

async function start() {
  if (values.cold) dropPageCache();
  const s = await launchServer({ env, logLevel: 'info', onLine });
  const readyMs = Math.round(await waitFor(s, '/ready', { intervalMs: 10, timeoutMs: 600_000 }));
  const ready = (await (await fetch(`${s.base}/ready`)).json()) as { recovery?: { chunks?: number } };
  // RSS once ready, and per chunk (what a restart leaves resident; the heap not yet collected).
  const rssKiB = statusKiB(s, 'VmRSS');
  // CPU time of the process until then (every thread): steadier than wall time on a shared machine.
  const stat = readFileSync(`/proc/${s.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const cpuMs = (Number(stat[11]) + Number(stat[12])) * 10;
  const chunks = ready.recovery?.chunks ?? 0;
  return {
    s,
    readyMs,
    cpuMs,
    recovery: ready.recovery,
    peakRssMiB: peakMiB(s),
    rssMiB: Math.round(rssKiB / 1024),
    rssKiBPerChunk: chunks ? Number((rssKiB / chunks).toFixed(2)) : undefined,
  };
}

const first = await start();
const { data } = await loadCorpus();
const tail = Number(values.tail);
const path = `${first.s.base}/api/v1/knowledge-bases/${meta.kbId}/contents`;
for (let i = 0; i < tail; i += 50) {
  await Promise.all(
    Array.from({ length: Math.min(50, tail - i) }, (_, j) =>
      fetch(`${path}?wait=true`, { method: 'POST', headers, body: JSON.stringify({ text: replicaText(data.corpus, meta.items + i + j).text }) }).then((r) => {
        if (r.status >= 300) throw new Error(`POST contents: ${r.status}`);
      }),
    ),
  );
}
await Bun.sleep(2000); // the graph catches up with the last vectors (as bench/scale.ts waits for it)
const peakBeforeStop = peakMiB(first.s);
const stopAt = performance.now();
const shutdownMs = Math.round(await first.s.stop(120_000));
// What the shutdown logged, ms after SIGTERM (a snapshot's own `ms` beside it).
const shutdownSteps = logged
  .filter((l) => l.at >= stopAt)
  .map((l) => ({ afterMs: Math.round(l.at - stopAt), msg: l.msg, ...(l.ms !== undefined ? { ms: l.ms } : {}) }));
const second = await start();
await second.s.stop(120_000);
await stub.stop();
console.log(
  JSON.stringify(
    {
      dataDir: base,
      tailItems: tail,
      cold: values.cold,
      first: {
        readyMs: first.readyMs,
        cpuMs: first.cpuMs,
        recovery: first.recovery,
        peakRssMiB: first.peakRssMiB,
        rssMiB: first.rssMiB,
        rssKiBPerChunk: first.rssKiBPerChunk,
      },
      peakRssMiBBeforeStop: peakBeforeStop,
      shutdownMs,
      shutdownSteps,
      exitCode: first.s.exitCode(),
      second: {
        readyMs: second.readyMs,
        cpuMs: second.cpuMs,
        recovery: second.recovery,
        peakRssMiB: second.peakRssMiB,
        rssMiB: second.rssMiB,
        rssKiBPerChunk: second.rssKiBPerChunk,
      },
    },
    null,
    2,
  ),
);
rmSync(work, { recursive: true, force: true });
