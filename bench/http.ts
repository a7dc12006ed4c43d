// Search and ingestion through the real HTTP server (bun src/main.ts), measured with autocannon:
//   floor      GET /health, the trivial route of the same server, in the same run;
//   search     POST full-text / semantic / hybrid at concurrency 1, 16, 64, SciFact train queries
//              rotated per request; req/s, p50/p99 and the ratio to the floor at each concurrency;
//   ingestion  acknowledgements/s of POST …/contents (no wait) and chunks indexed/s (/metrics);
//   restart    spawn → first 200 of /ready on the loaded data directory; memory per chunk (RSS);
//   target     full-text through HTTP at c = 16 (the restarted server) ÷ the engine alone on one
//              thread (openEngine on the same directory, in this process), in paired rounds: an
//              engine pass, then an HTTP run, seven times; the median of the rounds' ratios, so a
//              drift in the machine's speed (±20% within minutes on a shared VM) hits both sides.
//
//   bun bench/http.ts [--chunks 50k] [--duration 2] [--connections 1,16,64] [--quick]
//                     [--wrk auto|on|off] [--json out.json]
//
// Embeddings: the server's models point at an OpenAI-compatible stub started here (POST
// /embeddings on 127.0.0.1, deterministic hashed 384-d vectors; HIGH_QUALITY_MODEL=http:bench-hash).
// Indexing 50k chunks with a neural model would take far too long on this machine, so semantic and
// hybrid numbers measure the engine, the HTTP layer and the embedding plumbing, not a neural model
// (after a warm-up pass the server's query-vector cache answers the 809 distinct queries).
// When Debian's wrk is on PATH (--wrk auto), the floor and full-text are also measured with it:
// on a 2-core machine autocannon (JavaScript) can saturate before the server does.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { analyze } from '../engine/analysis/analyzer';
import { chunkText } from '../engine/chunking/chunker';
import { openEngine } from '../snapshots';
import {
  cpuSecondsOf,
  fmtCount,
  fmtInt,
  fmtMs,
  HASH_DIMENSIONS,
  HASH_MODEL,
  loadCorpus,
  machine,
  metricSum,
  parseCount,
  phaseTimer,
  pct,
  printTable,
  replicaTexts,
  rssOf,
  scrapeMetrics,
  startHashEmbedder,
  startServer,
  summarize,
  timeEach,
  waitReady,
  type Latency,
  type ServerHandle,
} from './common';

const { values: args } = parseArgs({
  options: {
    chunks: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    'ingest-connections': { type: 'string' },
    wrk: { type: 'string', default: 'auto' },
    quick: { type: 'boolean', default: false },
    json: { type: 'string' },
  },
  strict: true,
});
const quick = args.quick;
const targetChunks = parseCount(args.chunks ?? (quick ? '3k' : '50k'));
// autocannon counts whole seconds.
const durationS = Math.max(1, Math.round(Number(args.duration ?? (quick ? 1 : 2))));
const connectionsList = (args.connections ?? '1,16,64').split(',').map(Number);
const ingestConnections = Number(args['ingest-connections'] ?? 16);
const wrkPath = args.wrk === 'off' ? null : Bun.which('wrk');
if (args.wrk === 'on' && !wrkPath) throw new Error('--wrk on: wrk is not on PATH (apt-get install wrk)');
const ORG = 'org_bench';
const KEY = 'bench-key';
const CHUNKING = { size: 2000, overlap: 200 };
// Paired target rounds: an engine pass of at least TARGET_ENGINE_MS, then TARGET_HTTP_S of HTTP load.
const TARGET_ROUNDS = quick ? 1 : 7;
const TARGET_ENGINE_MS = quick ? 500 : 1500;
const TARGET_HTTP_S = quick ? 1 : 3;

const started = performance.now();
const { phases, phase } = phaseTimer();

// --- corpus -----------------------------------------------------------------------------------

const { data, generated } = await loadCorpus();
const chunksOf = new Map(data.corpus.map((d) => [d.id, chunkText(d.text, CHUNKING).length]));
let expected = 0;
let count = 0;
while (expected < targetChunks) expected += chunksOf.get(data.corpus[count++ % data.corpus.length]!.id)!;
const items = replicaTexts(data.corpus, count);
const queries = data.queries.map((q) => q.text);
console.log(
  `HTTP benchmark: ${fmtInt(items.length)} items (${generated ? 'generated' : 'SciFact train'} replicated, ≈${fmtInt(expected)} chunks at ${CHUNKING.size}/${CHUNKING.overlap}), ` +
    `${queries.length} queries; concurrency ${connectionsList.join(', ')}, ${durationS} s per run; load generator autocannon${wrkPath ? ' (+ wrk)' : ''}`,
);
console.log(`  embeddings: in-bench OpenAI-compatible stub (${HASH_MODEL}, hashed ${HASH_DIMENSIONS}-d) — semantic numbers measure engine + HTTP, not a neural model`);

// --- load generation --------------------------------------------------------------------------

interface Run {
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

interface Target {
  route: string;
  method: 'GET' | 'POST';
  path: string;
  bodies?: string[];
}

const headers = { 'x-service-organization-id': ORG, 'x-service-api-key': KEY, 'content-type': 'application/json' };

async function cannon(server: ServerHandle, target: Target, connections: number, opts: { duration?: number; amount?: number; record?: boolean }): Promise<Run> {
  let next = 0;
  const samples: number[] = [];
  let ok = 0;
  let non2xx = 0;
  const bodies = target.bodies;
  const request: autocannon.Request = {
    method: target.method,
    path: target.path,
    headers: target.method === 'POST' ? headers : {},
    ...(bodies ? { setupRequest: (req: autocannon.Request) => ({ ...req, body: bodies[next++ % bodies.length] }) } : {}),
  };
  const cpu0 = cpuSecondsOf(server.pid);
  const self0 = cpuSecondsOf('self');
  const t0 = performance.now();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: server.base,
        connections,
        ...(opts.amount ? { amount: opts.amount } : { duration: opts.duration ?? durationS }),
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

async function wrk(server: ServerHandle, target: Target, connections: number, seconds = durationS): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'kb-wrk-'));
  const script = join(dir, 'script.lua');
  const lines = [`wrk.method = "${target.method}"`];
  if (target.method === 'POST') for (const [k, v] of Object.entries(headers)) lines.push(`wrk.headers["${k}"] = "${v}"`);
  if (target.bodies) {
    lines.push(`local bodies = {${target.bodies.map(luaString).join(',\n')}}`, 'local n = #bodies', 'local i = 0');
    lines.push('request = function()', '  i = i % n + 1', '  return wrk.format(nil, nil, nil, bodies[i])', 'end');
  }
  writeFileSync(script, lines.join('\n') + '\n');
  const cpu0 = cpuSecondsOf(server.pid);
  const t0 = performance.now();
  const proc = Bun.spawn([wrkPath!, '-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, `${server.base}${target.path}`], { stdout: 'pipe', stderr: 'pipe' });
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

// --- the run ----------------------------------------------------------------------------------

const stub = startHashEmbedder();
const dataDir = mkdtempSync(join(tmpdir(), 'kb-bench-http-'));
const env = {
  DATA_DIR: dataDir,
  KB_API_KEYS: `${ORG}:${KEY}`,
  RATE_LIMIT_RPS: '0',
  HIGH_QUALITY_MODEL: `http:${HASH_MODEL}`,
  COST_EFFECTIVE_MODEL: `http:${HASH_MODEL}`,
  EMBEDDING_HTTP_URL: stub.url,
  EMBEDDING_HTTP_DIMENSIONS: String(HASH_DIMENSIONS),
};
const results: Record<string, unknown> = {
  part: 'http',
  mode: quick ? 'quick' : 'full',
  date: new Date().toISOString(),
  machine: machine(),
  settings: {
    targetChunks,
    items: items.length,
    durationSeconds: durationS,
    warmup: '1 s of load before each run (autocannon and wrk)',
    connections: connectionsList,
    ingestConnections,
    embedding: `OpenAI-compatible stub in the bench process: ${HASH_MODEL}, hashed ${HASH_DIMENSIONS}-d (not a neural model)`,
    serverEnv: { ...env, DATA_DIR: '(temporary)', EMBEDDING_HTTP_URL: '(stub on 127.0.0.1)', LOG_LEVEL: 'warn' },
    loadGenerators: wrkPath ? ['autocannon', 'wrk'] : ['autocannon'],
  },
};
const problems: string[] = [];

let server: ServerHandle | undefined;
try {
  const t0 = performance.now();
  server = await startServer(env);
  const readyMs = await waitReady(server.base, t0);
  const rssEmpty = rssOf(server.pid);
  console.log(`  server pid ${server.pid} on port ${server.port}, ready in ${fmtInt(readyMs)} ms, RSS ${(rssEmpty / 2 ** 20).toFixed(0)} MiB`);
  const s = server;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${s.base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, json: (await res.json().catch(() => undefined)) as any };
  };
  const created = await call('POST', '/api/v1/knowledge-bases', { name: 'bench http', type: 'TEXT_HIGH_QUALITY' });
  if (created.status !== 201) throw new Error(`create knowledge base: ${created.status} ${JSON.stringify(created.json)}`);
  const kbId = created.json.data.id as string;
  const configuration = (await call('GET', `/api/v1/knowledge-bases/${kbId}/configuration`)).json?.data;
  console.log(`  knowledge base ${kbId}: ${JSON.stringify({ embedding: configuration?.embedding, chunking: configuration?.chunking, bm25: configuration?.bm25 })}`);
  results.configuration = configuration;

  // Ingestion: POST without wait at `ingestConnections`, /metrics polled for indexing progress.
  results.ingestion = await phase(`ingestion: ${fmtInt(items.length)} items through POST …/contents`, async () => {
    const bodies = items.map((it) => JSON.stringify({ text: it.text, metadata: { sciId: it.source } }));
    const progress: { t: number; chunks: number; queue: number; rss: number }[] = [];
    const tStart = performance.now();
    let acksDone = false;
    let indexedAt = 0;
    const poller = (async () => {
      for (;;) {
        await Bun.sleep(quick ? 100 : 250);
        const m = await scrapeMetrics(s.base).catch(() => undefined);
        if (!m) continue;
        const chunks = metricSum(m, 'kb_chunks');
        const queue = metricSum(m, 'kb_ingestion_queue_depth');
        progress.push({ t: (performance.now() - tStart) / 1000, chunks, queue, rss: rssOf(s.pid) });
        if (acksDone && queue === 0 && metricSum(m, 'kb_contents{status="pending"}') + metricSum(m, 'kb_contents{status="processing"}') === 0) {
          indexedAt = performance.now();
          return { chunks, failed: metricSum(m, 'kb_contents{status="failed"}') };
        }
        if (performance.now() - tStart > 30 * 60_000) throw new Error('not indexed after 30 minutes');
      }
    })();
    const acks = await cannon(s, { route: 'POST contents', method: 'POST', path: `/api/v1/knowledge-bases/${kbId}/contents`, bodies }, ingestConnections, { amount: items.length });
    const ackSeconds = (performance.now() - tStart) / 1000;
    acksDone = true;
    const final = await poller;
    const indexedSeconds = (indexedAt - tStart) / 1000;
    // The HNSW graph is built in the background after indexing; searches are exact until it is done.
    let graphSeconds = 0;
    for (;;) {
      const pending = metricSum(await scrapeMetrics(s.base), 'kb_vectors_graph_pending');
      if (pending === 0) break;
      await Bun.sleep(1000); // seldom, like a metrics scraper: an idle server builds faster
      if (performance.now() - tStart > 30 * 60_000) throw new Error('HNSW graph not built after 30 minutes');
    }
    graphSeconds = (performance.now() - indexedAt) / 1000;
    if (acks.non2xx || acks.errors) problems.push(`ingestion: ${acks.non2xx} non-2xx answers and ${acks.errors} errors out of ${items.length} POSTs`);
    if (final.failed) problems.push(`ingestion: ${final.failed} items failed`);
    const out = {
      items: items.length,
      chunks: final.chunks,
      failed: final.failed,
      connections: ingestConnections,
      ackSeconds,
      acksPerSecond: acks.ok / ackSeconds,
      ackLatency: acks.latency,
      /** Server process CPU during the acknowledgements, in cores (worker threads included). */
      serverCoresDuringAcks: acks.serverCores,
      benchCoresDuringAcks: acks.clientCores,
      indexedSeconds,
      itemsIndexedPerSecond: items.length / indexedSeconds,
      chunksIndexedPerSecond: final.chunks / indexedSeconds,
      graphSeconds,
      embedderCalls: stub.calls(),
      progress,
    };
    console.log(
      `  ${fmtInt(acks.ok)} acknowledged in ${ackSeconds.toFixed(1)} s = ${fmtInt(out.acksPerSecond)} acks/s (c=${ingestConnections}, p50 ${fmtMs(acks.latency.p50)} ms, p99 ${fmtMs(acks.latency.p99)} ms); ` +
        `${fmtInt(final.chunks)} chunks indexed in ${indexedSeconds.toFixed(1)} s = ${fmtInt(out.chunksIndexedPerSecond)} chunks/s (${fmtInt(out.itemsIndexedPerSecond)} items/s); ` +
        `HNSW graph done ${graphSeconds.toFixed(1)} s later; ${final.failed} failed; server CPU ${acks.serverCores.toFixed(2)} cores, this process (autocannon + embedder stub) ${acks.clientCores.toFixed(2)} cores`,
    );
    return out;
  });
  const chunks = (results.ingestion as { chunks: number }).chunks;
  const rssLoaded = rssOf(s.pid);

  // Check every route answers, and fill the server's query-vector cache (one pass of all queries).
  const warm = await phase('warm-up: every query once through semantic search', async () => {
    const hitCounts: Record<string, number> = { 'full-text': 0, semantic: 0, hybrid: 0 };
    const statuses: Record<string, number> = {};
    for (const q of queries) {
      const res = await call('POST', `/api/v1/knowledge-bases/${kbId}/search/semantic`, { query: q, limit: 10 });
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.status === 200) hitCounts.semantic! += res.json.data.length;
    }
    for (const mode of ['full-text', 'hybrid'] as const) {
      for (const q of queries.slice(0, 50)) {
        const res = await call('POST', `/api/v1/knowledge-bases/${kbId}/search/${mode}`, { query: q, limit: 10 });
        statuses[`${mode} ${res.status}`] = (statuses[`${mode} ${res.status}`] ?? 0) + 1;
        if (res.status === 200) hitCounts[mode]! += res.json.data.length;
      }
    }
    if (Object.keys(statuses).some((k) => !/(^| )200$/.test(k))) problems.push(`warm-up answers not all 200: ${JSON.stringify(statuses)}`);
    console.log(`  statuses ${JSON.stringify(statuses)}; mean hits ${JSON.stringify(Object.fromEntries(Object.entries(hitCounts).map(([k, v]) => [k, +(v / (k === 'semantic' ? queries.length : 50)).toFixed(1)])))}`);
    return { statuses, hitCounts };
  });
  results.warmup = warm;

  const searchBody = (extra: Record<string, unknown> = {}) => queries.map((q) => JSON.stringify({ query: q, limit: 10, ...extra }));
  const targets: Target[] = [
    { route: 'GET /health (floor)', method: 'GET', path: '/health' },
    { route: 'full-text', method: 'POST', path: `/api/v1/knowledge-bases/${kbId}/search/full-text`, bodies: searchBody() },
    { route: 'semantic', method: 'POST', path: `/api/v1/knowledge-bases/${kbId}/search/semantic`, bodies: searchBody() },
    { route: 'hybrid', method: 'POST', path: `/api/v1/knowledge-bases/${kbId}/search/hybrid`, bodies: searchBody({ semanticWeight: 0.5 }) },
  ];
  const snapshotBefore = (await call('GET', '/ready')).json?.snapshots;
  const runs: Run[] = await phase(`throughput: ${targets.length} routes × concurrency ${connectionsList.join('/')} × ${durationS} s`, async () => {
    const out: Run[] = [];
    for (const target of targets) {
      for (const c of connectionsList) {
        await cannon(s, target, c, { duration: 1, record: false });
        const run = await cannon(s, target, c, {});
        out.push(run);
        console.log(
          `  ${target.route.padEnd(20)} c=${String(c).padStart(2)}  ${fmtInt(run.requestsPerSecond).padStart(7)} req/s  p50 ${fmtMs(run.latency.p50)} ms  p99 ${fmtMs(run.latency.p99)} ms  ` +
            `server ${run.serverCores.toFixed(2)} cores, autocannon ${run.clientCores.toFixed(2)} cores${run.non2xx + run.errors ? `  (${run.non2xx} non-2xx, ${run.errors} errors)` : ''}`,
        );
        if (run.non2xx + run.errors) problems.push(`${target.route} c=${c}: ${run.non2xx} non-2xx and ${run.errors} errors`);
      }
    }
    if (wrkPath) {
      for (const target of targets.slice(0, 2)) {
        for (const c of connectionsList) {
          await wrk(s, target, c, 1);
          const run = await wrk(s, target, c);
          out.push(run);
          console.log(`  wrk ${target.route.padEnd(16)} c=${String(c).padStart(2)}  ${fmtInt(run.requestsPerSecond).padStart(7)} req/s  p50 ${fmtMs(run.latency.p50)} ms  p99 ${fmtMs(run.latency.p99)} ms  server ${run.serverCores.toFixed(2)} cores`);
        }
      }
    }
    return out;
  });
  const snapshotAfter = (await call('GET', '/ready')).json?.snapshots;
  if (snapshotAfter?.lastSuccessAt !== snapshotBefore?.lastSuccessAt) problems.push(`a snapshot ran during the throughput runs (${JSON.stringify(snapshotAfter)})`);
  results.runs = runs;
  results.snapshots = { before: snapshotBefore, after: snapshotAfter };

  const serverLogs = [...s.logs];
  const shutdownMs = await s.stop();
  server = undefined;

  // Restart on the loaded directory: spawn → /ready 200. The restarted server then serves the target rounds.
  const restart = await phase('restart on the loaded data directory', async () => {
    const t = performance.now();
    const again = await startServer(env);
    server = again;
    const readyMs = await waitReady(again.base, t);
    const ready = (await (await fetch(`${again.base}/ready`)).json()) as { recovery?: unknown };
    const rssReady = rssOf(again.pid);
    const check = await fetch(`${again.base}/api/v1/knowledge-bases/${kbId}/search/full-text`, { method: 'POST', headers, body: JSON.stringify({ query: queries[0], limit: 10 }) });
    const hits = ((await check.json()) as { data?: unknown[] }).data?.length ?? 0;
    console.log(`  ready in ${fmtInt(readyMs)} ms after spawn (recovery ${JSON.stringify(ready.recovery)}); RSS ${(rssReady / 2 ** 20).toFixed(0)} MiB; a search answers ${check.status} with ${hits} hits`);
    return { readyMs, recovery: ready.recovery, rssReady, searchStatus: check.status };
  });

  // The target: full-text through HTTP at c=16 against the engine alone on one thread. On a shared
  // machine the speed of either side drifts by ±20% within minutes, so they are measured in paired
  // rounds (an engine pass in this process, then an HTTP run) and the ratio is the median of the
  // rounds' ratios. Both sides hold the same state: the restarted server and an Engine opened here
  // on the same directory, each loaded from the snapshot and log.
  const paired = await phase(`target: full-text c=16 through HTTP vs the engine alone, ${TARGET_ROUNDS} paired round(s)`, async () => {
    const s2 = server!;
    const { engine } = await openEngine({
      dataDir,
      compute: { documentWorkers: 1, queryWorkers: 1, settings: { modelDir: join(dataDir, 'models'), allowRemoteModels: false, threads: 1, http: { url: stub.url, timeoutMs: 30_000, retries: 0 } } },
      log: () => {},
    });
    try {
      const kb = engine.knowledgeBase(kbId)!;
      const search = (q: string) => engine.searchFullText(ORG, kbId, { query: q, limit: 10 });
      const indexOnly = (q: string) => kb.bm25.search(analyze(q), 10);
      const fullText = targets[1]!;
      const tool: Run['tool'] = wrkPath ? 'wrk' : 'autocannon';
      const httpRun = (seconds: number) => (wrkPath ? wrk(s2, fullText, 16, seconds) : cannon(s2, fullText, 16, { duration: seconds }));
      timeEach(queries, 1, search);
      timeEach(queries, 1, indexOnly);
      await httpRun(1);
      const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
      const engineSamples: number[] = [];
      const indexSamples: number[] = [];
      const rounds: { engineQueriesPerSecond: number; httpRequestsPerSecond: number; ratio: number; p50Ms: number; p99Ms: number; serverCores: number }[] = [];
      for (let r = 0; r < TARGET_ROUNDS; r++) {
        // Whole passes over the queries for at least TARGET_ENGINE_MS.
        const round: number[] = [];
        const t = performance.now();
        do round.push(...timeEach(queries, 1, search));
        while (performance.now() - t < TARGET_ENGINE_MS);
        engineSamples.push(...round);
        indexSamples.push(...timeEach(queries, 1, indexOnly));
        const engineQps = round.length / (sum(round) / 1000);
        const run = await httpRun(TARGET_HTTP_S);
        if (run.non2xx + run.errors) problems.push(`target round ${r + 1}: ${run.non2xx} non-2xx and ${run.errors} errors`);
        rounds.push({ engineQueriesPerSecond: engineQps, httpRequestsPerSecond: run.requestsPerSecond, ratio: run.requestsPerSecond / engineQps, p50Ms: run.latency.p50, p99Ms: run.latency.p99, serverCores: run.serverCores });
        console.log(
          `  round ${r + 1}: engine ${fmtInt(engineQps)} queries/s; HTTP (${tool}) ${fmtInt(run.requestsPerSecond)} req/s, p50 ${fmtMs(run.latency.p50)} ms, p99 ${fmtMs(run.latency.p99)} ms, ` +
            `server ${run.serverCores.toFixed(2)} cores → ${pct(run.requestsPerSecond / engineQps)}`,
        );
      }
      const engineAlone = {
        chunks: kb.chunkCount,
        recovery: engine.recovery,
        searchFullText: { latency: summarize(engineSamples), queriesPerSecond: engineSamples.length / (sum(engineSamples) / 1000) },
        indexSearch: { latency: summarize(indexSamples), queriesPerSecond: indexSamples.length / (sum(indexSamples) / 1000) },
      };
      console.log(
        `  Engine.searchFullText (analysis + BM25 + hits), all rounds: ${fmtInt(engineAlone.searchFullText.queriesPerSecond)} queries/s, p50 ${fmtMs(engineAlone.searchFullText.latency.p50)} ms, ` +
          `p99 ${fmtMs(engineAlone.searchFullText.latency.p99)} ms; analysis + index only (as bench/fulltext.ts): ${fmtInt(engineAlone.indexSearch.queriesPerSecond)} queries/s`,
      );
      return { tool, rounds, engineAlone };
    } finally {
      await engine.close();
    }
  });
  const engineAlone = paired.engineAlone;
  await server!.stop();
  server = undefined;

  // Summary.
  const floorAt = (c: number) => Math.max(...runs.filter((r) => r.route.startsWith('GET /health') && r.connections === c).map((r) => r.requestsPerSecond));
  const autocannonRuns = runs.filter((r) => r.tool === 'autocannon');
  // The sweep above ran on the server that took the ingestion; its ratios use the rounds' median engine speed.
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  const { rounds } = paired;
  const engineQps = median(rounds.map((r) => r.engineQueriesPerSecond));
  const table = runs.map((r) => {
    const floor = floorAt(r.connections);
    return {
      ...r,
      floorRatio: r.route.startsWith('GET /health') ? undefined : r.requestsPerSecond / floor,
      engineRatio: r.route === 'full-text' ? r.requestsPerSecond / engineQps : undefined,
    };
  });
  printTable(
    `Through HTTP, ${fmtInt(chunks)} chunks (${durationS} s per run after a warm-up; floor = best GET /health at the same concurrency, any tool)`,
    ['route', 'tool', 'c', 'req/s', 'p50 ms', 'p99 ms', '÷ floor', '÷ engine 1 thread', 'server cores', 'client cores'],
    table.map((r) => [r.route, r.tool, r.connections, fmtInt(r.requestsPerSecond), fmtMs(r.latency.p50), fmtMs(r.latency.p99), pct(r.floorRatio), pct(r.engineRatio), r.serverCores.toFixed(2), Number.isFinite(r.clientCores) ? r.clientCores.toFixed(2) : '-']),
  );
  const target = {
    connections: 16,
    rounds,
    tool: paired.tool,
    httpRequestsPerSecond: median(rounds.map((r) => r.httpRequestsPerSecond)),
    engineQueriesPerSecond: engineQps,
    ratio: median(rounds.map((r) => r.ratio)),
    ratioTarget: 0.7,
    // The worst round's p99, not a typical one.
    p99Ms: Math.max(...rounds.map((r) => r.p99Ms)),
    p99TargetMs: 10,
    floorRequestsPerSecond: floorAt(16),
  };
  console.log(
    `\n  target (50k chunks, c=16): HTTP full-text ${fmtInt(target.httpRequestsPerSecond)} req/s (${target.tool}) ÷ engine alone ${fmtInt(target.engineQueriesPerSecond)} queries/s on one thread: ` +
      `median of ${rounds.length} paired round(s) ${pct(target.ratio)} (rounds ${rounds.map((r) => pct(r.ratio)).join(', ')}; target ≥ 70%: ${target.ratio >= 0.7 ? 'met' : 'MISSED'}); ` +
      `worst p99 ${fmtMs(target.p99Ms)} ms (target ≤ 10 ms: ${target.p99Ms <= 10 ? 'met' : 'MISSED'}); ` +
      `HTTP floor ${fmtInt(target.floorRequestsPerSecond)} req/s${targetChunks !== 50_000 ? ` — measured at ${fmtCount(targetChunks)} chunks, not 50k` : ''}`,
  );
  const rssGrowth = rssLoaded - rssEmpty;
  results.memory = {
    rssEmpty,
    rssLoaded,
    rssAfterRestart: restart.rssReady,
    bytesPerChunkLoaded: rssGrowth / chunks,
    bytesPerChunkAfterRestart: (restart.rssReady - rssEmpty) / chunks,
  };
  console.log(
    `  server memory: RSS ${(rssEmpty / 2 ** 20).toFixed(0)} MiB empty → ${(rssLoaded / 2 ** 20).toFixed(0)} MiB loaded = ${fmtInt(rssGrowth / chunks)} bytes/chunk; ` +
      `after restart ${(restart.rssReady / 2 ** 20).toFixed(0)} MiB = ${fmtInt((restart.rssReady - rssEmpty) / chunks)} bytes/chunk (384-d f32 vectors are 1,536 bytes of it)`,
  );
  console.log(`  shutdown (SIGTERM → exit, snapshot on shutdown included) ${fmtInt(shutdownMs)} ms; restart (spawn → /ready) ${fmtInt(restart.readyMs)} ms`);
  results.table = table;
  results.target = target;
  results.engineAlone = engineAlone;
  results.restart = { ...restart, shutdownMs };
  results.floor = Object.fromEntries(connectionsList.map((c) => [c, floorAt(c)]));
  results.autocannonFloor = Object.fromEntries(connectionsList.map((c) => [c, autocannonRuns.find((r) => r.route.startsWith('GET /health') && r.connections === c)?.requestsPerSecond]));
  results.serverLogs = serverLogs.slice(0, 50);
  if (serverLogs.length) console.log(`  server warnings/errors (${serverLogs.length}): ${serverLogs.slice(0, 5).join(' | ')}`);
} finally {
  if (server) await server.stop().catch(() => {});
  stub.stop();
  rmSync(dataDir, { recursive: true, force: true });
}

results.problems = problems;
results.phasesMs = phases;
results.millis = Math.round(performance.now() - started);
for (const p of problems) console.log(`  problem: ${p}`);
console.log(`\nHTTP benchmark done in ${(results.millis as number / 1000).toFixed(1)} s`);
if (args.json) await Bun.write(args.json, JSON.stringify(results, null, 2) + '\n');
// Leftover handles (autocannon's timers, keep-alive sockets) can keep the process alive for minutes.
process.exit(0);
