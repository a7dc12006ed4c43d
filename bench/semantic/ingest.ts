// bench/semantic.ts, part 'ingest': the whole SciFact corpus through HTTP into a server started
// the way a user starts it — no model environment at all, so the shipped model (all-MiniLM-L6-v2
// int8) serves every type, with the default workers, threads and batches. Measured: wall time from
// the first POST until every item is ready, chunks/s, the server's CPU (each thread group: the
// request thread, the document workers, the rest) against both cores, the machine's load, and a
// light search probe (one semantic and one full-text search a second) for latency during the load.
//
// --ingest-env adds variables to the server's environment (KEY=VALUE,…): the emulation of the
// shipped default before it landed was
//   --ingest-env EMBEDDING_MODEL_DIR=../shared/models,EMBEDDING_PRECISION=int8,HIGH_QUALITY_MODEL=transformers:Xenova/all-MiniLM-L6-v2,COST_EFFECTIVE_MODEL=transformers:Xenova/all-MiniLM-L6-v2
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuSecondsOf, machineJiffies, machineShare } from '../lib/cpu';
import { bulkWrite } from '../lib/bulk-write';
import type { CorpusDoc } from '../lib/eval-data';
import { fmtInt, fmtMs, pct, secs } from '../lib/format';
import { CORES } from '../lib/machine';
import { BENCH_OUT } from '../lib/paths';
import { metricSum, scrapeMetrics } from '../lib/metrics';
import { launchServer, waitFor } from '../lib/server';
import { summarize } from '../lib/stats';
import { printTable } from '../lib/table';
import { args, quick } from './options';

const SERVER_LOG = join(BENCH_OUT, 'semantic-ingest-server.log');
const CLK_TCK = Number(Bun.spawnSync(['getconf', 'CLK_TCK']).stdout.toString().trim()) || 100;

/** Every setting that changes which model runs or how ingestion is laid out: cleared, so the server starts on its defaults. */
const MODEL_ENV = [
  'EMBEDDING_MODEL_DIR',
  'EMBEDDING_PRECISION',
  'EMBEDDING_THREADS',
  'EMBEDDING_BATCH_SIZE',
  'EMBEDDING_BATCH_CHARS',
  'EMBEDDING_BATCH_TOKENS',
  'EMBEDDING_ALLOW_REMOTE',
  'HIGH_QUALITY_MODEL',
  'COST_EFFECTIVE_MODEL',
  'INGEST_WORKERS',
  'QUERY_WORKERS',
];

/** `KEY=VALUE,KEY=VALUE` → an environment. */
export function parseEnv(raw: string | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of (raw ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--ingest-env: expected KEY=VALUE, got "${pair}"`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return env;
}

/** CPU seconds of each thread of a process, by thread id, with its name. */
function threadSeconds(pid: number): Map<string, { name: string; seconds: number }> {
  const out = new Map<string, { name: string; seconds: number }>();
  const tick = CLK_TCK;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        out.set(tid, { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), seconds: (Number(fields[11]) + Number(fields[12])) / tick });
      } catch {}
    }
  } catch {}
  return out;
}

const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

export async function ingestPart(corpus: readonly CorpusDoc[]) {
  const docs = quick ? corpus.slice(0, 300) : corpus;
  const extra = parseEnv(args['ingest-env']);
  const env: Record<string, string> = { DATA_DIR: '', KB_API_KEYS: 'org_i:key', ...Object.fromEntries(MODEL_ENV.map((k) => [k, ''])), ...extra };
  const dataDir = mkdtempSync(join(tmpdir(), 'kb-semantic-ingest-'));
  env.DATA_DIR = dataDir;
  const logFile = Bun.file(SERVER_LOG).writer();
  const server = await launchServer({ env, logLevel: 'info', onLine: (line, name) => void logFile.write(`${name}: ${line}\n`) });
  const base = server.base;
  const headers = { 'x-service-organization-id': 'org_i', 'x-service-api-key': 'key', 'content-type': 'application/json' };
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const res = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, json: await res.json().catch(() => undefined) };
  };
  try {
    const readyMs = await waitFor(server, '/ready', { intervalMs: 50, timeoutMs: 180_000 });
    const type = args['ingest-type'];
    const created = await call('POST', '/api/v1/knowledge-bases', { name: 'ingest bench', type });
    if (created.status !== 201) throw new Error(`create knowledge base: ${created.status} ${JSON.stringify(created.json)}`);
    const kbId = created.json.data.id as string;
    const configuration = (await call('GET', `/api/v1/knowledge-bases/${kbId}/configuration`)).json.data;
    const serverEnv =
      Object.entries(extra)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ') || '(no model environment: the defaults)';
    console.log(
      `  server ready in ${secs(readyMs)}; ${type} = ${configuration.embedding.model} ${configuration.embedding.precision ?? ''} (vectors ${configuration.embedding.quantization}), ` +
        `chunking ${configuration.chunking.size}/${configuration.chunking.overlap}; server env: ${serverEnv}`,
    );
    const load0 = load();

    const writers = 4;
    const t0 = performance.now();
    const cpu0 = cpuSecondsOf(server.pid);
    const threads0 = threadSeconds(server.pid);
    const machine0 = machineJiffies();
    const benchCpu0 = cpuSecondsOf('self');
    const bulk = bulkWrite(base, kbId, headers, docs, writers);
    let ackEnd = 0;
    const writing = bulk.done.then((at) => (ackEnd = at));

    // Progress every 250 ms (the knowledge base's own counts); a search pair every second.
    let doneAt = 0;
    let settled = { ready: 0, failed: 0 };
    const semantic: number[] = [];
    const fullText: number[] = [];
    let searchErrors = 0;
    const queries = [
      'effects of vitamin D on bone density',
      'gene expression in tumour cells',
      'antibiotic resistance mechanisms',
      'insulin signalling pathway',
    ];
    const search = async (kind: 'semantic' | 'full-text', i: number) => {
      const t = performance.now();
      const res = await fetch(`${base}/api/v1/knowledge-bases/${kbId}/search/${kind}`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ query: `${queries[i % queries.length]} ${i}`, limit: 10 }),
      });
      await res.arrayBuffer();
      if (res.status !== 200) searchErrors++;
      (kind === 'semantic' ? semantic : fullText).push(performance.now() - t);
    };
    const prober = (async () => {
      for (let i = 0; doneAt === 0; i++) {
        await Bun.sleep(1000);
        if (doneAt) break;
        await search('semantic', i);
        await search('full-text', i);
      }
    })();
    let lastLog = 0;
    for (;;) {
      await Bun.sleep(250);
      const kb = (await call('GET', `/api/v1/knowledge-bases/${kbId}`)).json.data.ingestion as {
        contents: Record<'pending' | 'processing' | 'ready' | 'failed', number>;
      };
      settled = { ready: kb.contents.ready, failed: kb.contents.failed };
      const t = performance.now() - t0;
      if (t - lastLog >= 30_000) {
        lastLog = t;
        console.log(`    ${secs(t)}: ${fmtInt(settled.ready + settled.failed)} of ${fmtInt(docs.length)} settled (load ${load()})`);
      }
      if (bulk.acked === docs.length && settled.ready + settled.failed >= docs.length) {
        doneAt = performance.now();
        break;
      }
      if (t > 30 * 60_000) throw new Error('not indexed after 30 minutes');
    }
    const cpuSeconds = cpuSecondsOf(server.pid) - cpu0;
    const benchCpuSeconds = cpuSecondsOf('self') - benchCpu0;
    const threads1 = threadSeconds(server.pid);
    const machine1 = machineJiffies();
    const load1 = load();
    await writing;
    await prober;
    const seconds = (doneAt - t0) / 1000;
    // Chunks counted item by item (the content list's chunkCount), after the clock stopped; /metrics beside it as a check.
    let chunks = 0;
    for (let page = 1; ; page++) {
      const list = (await call('GET', `/api/v1/knowledge-bases/${kbId}/contents?page=${page}&limit=100`)).json as { data: { chunkCount: number }[] };
      for (const item of list.data) chunks += item.chunkCount;
      if (list.data.length < 100) break;
    }
    const metricChunks = metricSum(await scrapeMetrics(base), 'kb_chunks');
    if (metricChunks !== chunks) console.log(`  note: /metrics kb_chunks says ${fmtInt(metricChunks)}, the items' chunkCount ${fmtInt(chunks)} (used here)`);

    // Threads grouped by name; the busiest name is the document workers when they are named alike.
    const groups = new Map<string, { threads: number; seconds: number }>();
    for (const [tid, t] of threads1) {
      const d = t.seconds - (threads0.get(tid)?.seconds ?? 0);
      const key = tid === String(server.pid) ? 'main (requests, log, index)' : t.name;
      const g = groups.get(key) ?? { threads: 0, seconds: 0 };
      if (d > 0.05) g.threads++;
      g.seconds += d;
      groups.set(key, g);
    }
    const busiest = [...threads1]
      .map(([tid, t]) => ({ tid, name: t.name, seconds: t.seconds - (threads0.get(tid)?.seconds ?? 0) }))
      .sort((a, b) => b.seconds - a.seconds)
      .slice(0, 6);

    console.log(
      `  ${fmtInt(docs.length)} documents (title + text) by ${writers} writers: acknowledged in ${((ackEnd - t0) / 1000).toFixed(1)} s (${JSON.stringify(bulk.status)})`,
    );
    console.log(
      `  every item ready after ${seconds.toFixed(1)} s: ${fmtInt(chunks)} chunks = ${(chunks / seconds).toFixed(1)} chunks/s, ${(docs.length / seconds).toFixed(1)} documents/s; ${settled.failed} failed`,
    );
    console.log(
      `  server CPU ${cpuSeconds.toFixed(1)} s = ${pct(cpuSeconds / seconds / CORES)} of ${CORES} cores (${((1000 * cpuSeconds) / chunks).toFixed(1)} ms a chunk); whole machine ${pct(machineShare(machine0, machine1))} busy; ` +
        `load average before ${load0}, after ${load1}`,
    );
    // The machine's busy share less the server's and this client's: other work that competed with the load.
    const othersShare = Math.max(0, machineShare(machine0, machine1) - (cpuSeconds + benchCpuSeconds) / seconds / CORES);
    console.log(
      `  other processes took ${pct(othersShare)} of the machine meanwhile (this client ${pct(benchCpuSeconds / seconds / CORES)}); on idle cores the server's CPU time gives about ${((CORES * chunks) / cpuSeconds).toFixed(1)} chunks/s`,
    );
    printTable(
      'Server CPU by thread during the load',
      ['thread', 'threads', 'CPU s', 'share of one core', 'ms a chunk'],
      [...groups]
        .filter(([, g]) => g.seconds > 0.05)
        .sort((a, b) => b[1].seconds - a[1].seconds)
        .map(([name, g]) => [name, g.threads, g.seconds.toFixed(1), pct(g.seconds / seconds), ((1000 * g.seconds) / chunks).toFixed(2)]),
    );
    console.log(`  busiest threads: ${busiest.map((t) => `${t.name}#${t.tid} ${t.seconds.toFixed(1)} s`).join(', ')}`);
    const sem = summarize(semantic);
    const ft = summarize(fullText);
    console.log(
      `  searches during the load (one pair a second): semantic p50 ${fmtMs(sem.p50)} / p95 ${fmtMs(sem.p95)} / max ${fmtMs(Math.max(...semantic))} ms; ` +
        `full-text p50 ${fmtMs(ft.p50)} / p95 ${fmtMs(ft.p95)} / max ${fmtMs(Math.max(...fullText))} ms (${semantic.length} pairs, ${searchErrors} errors)`,
    );
    return {
      env: extra,
      type,
      configuration,
      documents: docs.length,
      chunks,
      seconds,
      chunksPerSecond: chunks / seconds,
      ackSeconds: (ackEnd - t0) / 1000,
      failed: settled.failed,
      serverCpuSeconds: cpuSeconds,
      serverCpuShare: cpuSeconds / seconds / CORES,
      machineBusy: machineShare(machine0, machine1),
      othersShare,
      benchCpuSeconds,
      loadBefore: load0,
      loadAfter: load1,
      threads: Object.fromEntries(groups),
      searches: { semantic: sem, fullText: ft, errors: searchErrors },
    };
  } finally {
    await server.stop();
    await logFile.end();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
