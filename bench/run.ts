// `bun run bench`: every benchmark part in one run, one summary table, one JSON, one HTML report.
//
//   bun bench/run.ts [--quick] [--parts engine,fulltext,http,restart,pglite,semantic]
//                    [--sizes 10k,50k,200k] [--http-chunks 50k] [--replicas 10]
//                    [--restart-items 50k] [--duration 3] [--scale-sizes 10k,100k] [--out .bench-out/bench]
//
// Parts (each a child process, run one after the other so they never compete for the 2 cores):
//   engine    bench/engine-modes.ts   engine latency of full-text / semantic / hybrid at --sizes
//                                     chunks, exact brute force beside it, quality per mode, memory
//   fulltext  bench/fulltext.ts       full-text quality and latency with Orama and MiniSearch on the
//                                     same data (--replicas ×), its own size curve
//   http      bench/http.ts           the real server under autocannon (and wrk when installed):
//                                     floor, search at c = 1/16/64, engine alone, ingestion, restart
//   restart   bench/restart.ts        restart time of a server holding --restart-items items (log replay)
//   pglite    bench/peers-pglite.ts   PostgreSQL full-text + pgvector (PGlite) at 1× and --replicas ×
//   semantic  bench/semantic.ts       USE-Lite quality of semantic and hybrid search (default only when
//                                     its embedded corpus is cached in .bench-out/semantic: embedding
//                                     SciFact takes minutes; ask for it with --parts to build it)
//   scale     bench/scale.ts          one node at --scale-sizes chunks (default 10k,100k): bulk load,
//                                     memory per chunk, snapshot size, restart split, search per mode
//                                     through HTTP, projections to 1M/10M (not by default: ~10 minutes
//                                     at 10k,100k; ask with --parts; --quick runs it at 2k)
// --quick: tiny sizes and short runs (a smoke test, under two minutes; no thresholds are asserted).
// Writes <out>.json (every part's results under its name, plus parts/summary/problems) and <out>.html.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parseCount } from './lib/format';
import { machine } from './lib/machine';
import { BENCH_OUT, REPO_ROOT } from './lib/paths';
import { printSummary, renderHtml, summaryRows, type Combined } from './report';

const ALL_PARTS = ['engine', 'fulltext', 'http', 'restart', 'pglite', 'semantic', 'scale'] as const;
type Part = (typeof ALL_PARTS)[number];

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    parts: { type: 'string' },
    sizes: { type: 'string' },
    'http-chunks': { type: 'string' },
    replicas: { type: 'string' },
    'restart-items': { type: 'string' },
    duration: { type: 'string' },
    'scale-sizes': { type: 'string' },
    out: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});
if (args.help) {
  console.log(
    readFileSync(import.meta.path, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('//'))
      .map((l) => l.slice(3))
      .join('\n'),
  );
  process.exit(0);
}
const quick = args.quick;
const out = resolve(args.out ?? join(BENCH_OUT, quick ? 'bench-quick' : 'bench'));
const partsDir = `${out}-parts`;
mkdirSync(partsDir, { recursive: true });
mkdirSync(dirname(out), { recursive: true });

const semanticCache = join(BENCH_OUT, 'semantic', `use-lite-1000-100${quick ? '-quick' : ''}`, 'wal');

/** Another bench/semantic.ts running now may hold its cached data directory open. */
function semanticRunning(): boolean {
  try {
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
      if (Number(pid) === process.pid) continue;
      try {
        if (
          readFileSync(`/proc/${pid}/cmdline`, 'utf8')
            .split('\0')
            .some((a) => a.endsWith('bench/semantic.ts'))
        )
          return true;
      } catch {}
    }
  } catch {}
  return false;
}

const notes: Record<string, string> = {};
let parts: Part[];
if (args.parts) {
  parts = args.parts
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => {
      if (!(ALL_PARTS as readonly string[]).includes(p)) throw new Error(`unknown part "${p}" (use ${ALL_PARTS.join(', ')})`);
      return p as Part;
    });
} else {
  parts = ALL_PARTS.filter((p) => p !== 'semantic' && p !== 'scale');
  notes.scale = 'not by default (about 10 minutes at 10k and 100k chunks; ask with --parts scale)';
  if (quick) notes.semantic = 'not in --quick (loads USE-Lite; ask with --parts semantic)';
  else if (!existsSync(semanticCache))
    notes.semantic = `skipped: no cached USE-Lite corpus in ${semanticCache} (run with --parts semantic once to build it, several minutes)`;
  else if (semanticRunning()) notes.semantic = 'skipped: another bench/semantic.ts is running and may hold its cached data directory';
  else parts.push('semantic');
}

const json = (name: string) => join(partsDir, `${name}.json`);
const flag = (name: string, value: string | undefined) => (value ? [`--${name}`, value] : []);
const commands: Record<Part, string[]> = {
  engine: ['bench/engine-modes.ts', ...(quick ? ['--quick'] : []), ...flag('sizes', args.sizes), '--json', json('engine')],
  // The engine part measures every size, so fulltext skips its own size curve.
  fulltext: [
    'bench/fulltext.ts',
    ...(quick ? ['--quick', '--replicas', '1'] : []),
    ...(!quick ? flag('replicas', args.replicas) : []),
    '--no-curve',
    '--json',
    json('fulltext'),
  ],
  http: [
    'bench/http.ts',
    ...(quick ? ['--quick', '--wrk', 'off'] : []),
    ...flag('chunks', args['http-chunks']),
    ...flag('duration', args.duration),
    '--json',
    json('http'),
  ],
  restart: ['bench/restart.ts', '--items', String(args['restart-items'] ? parseCount(args['restart-items']) : quick ? 1000 : 50_000)],
  pglite: ['bench/peers-pglite.ts', ...(quick ? ['--quick'] : []), ...flag('replicas', args.replicas), '--json', json('pglite')],
  semantic: ['bench/semantic.ts', '--parts', 'quality', '--models', 'use-lite', ...(quick ? ['--quick'] : []), '--json', json('semantic')],
  // --quick: a tiny size, so a smoke test exercises the whole path in seconds.
  scale: [
    'bench/scale.ts',
    ...(quick ? ['--quick', '--sizes', '2k', '--duration', '1', '--queries', '50'] : ['--sizes', args['scale-sizes'] ?? '10k,100k']),
    '--json',
    json('scale'),
  ],
};
// A quick part takes about a minute alone; on a machine loaded by other work, several (fulltext was
// killed at 150 s while other suites ran).
const TIMEOUT_MS = quick ? 400_000 : 45 * 60_000;

const started = performance.now();
const combined: Combined = {
  kind: 'kb-search benchmark',
  version: 1,
  mode: quick ? 'quick' : 'full',
  date: new Date().toISOString(),
  command: `bun bench/run.ts ${Bun.argv.slice(2).join(' ')}`.trim(),
  machine: machine(),
  parts: {},
  problems: [] as string[],
};
for (const [name, note] of Object.entries(notes)) combined.parts[name] = { status: 'skipped', note };

console.log(`kb-search benchmark (${combined.mode}): parts ${parts.join(', ')}; results → ${out}.json, ${out}.html`);
for (const [name, note] of Object.entries(notes)) console.log(`  ${name}: ${note}`);

/** Run a part, echoing its output with a prefix; resolves with its exit code and whole stdout. */
async function runPart(name: Part): Promise<{ code: number; stdout: string; seconds: number }> {
  const cmd = ['bun', ...commands[name]];
  console.log(`\n━━ ${name}: ${cmd.join(' ')}`);
  const t = performance.now();
  const proc = Bun.spawn(cmd, { cwd: REPO_ROOT, stdout: 'pipe', stderr: 'pipe', env: process.env });
  const timer = setTimeout(() => {
    console.log(`  [${name}] timed out after ${TIMEOUT_MS / 1000} s: stopping it`);
    proc.kill('SIGKILL');
  }, TIMEOUT_MS);
  const log = Bun.file(join(partsDir, `${name}.log`)).writer();
  let stdout = '';
  const pump = async (stream: ReadableStream<Uint8Array>, keep: boolean) => {
    const decoder = new TextDecoder();
    let buf = '';
    for await (const chunk of stream) {
      const text = decoder.decode(chunk, { stream: true });
      if (keep) stdout += text;
      buf += text;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        console.log(`  [${name}] ${line}`);
        log.write(`${line}\n`);
      }
    }
    if (buf) {
      console.log(`  [${name}] ${buf}`);
      log.write(`${buf}\n`);
    }
  };
  await Promise.all([pump(proc.stdout, true), pump(proc.stderr, false)]);
  const code = await proc.exited;
  clearTimeout(timer);
  await log.end();
  return { code, stdout, seconds: (performance.now() - t) / 1000 };
}

for (const name of parts) {
  const { code, stdout, seconds } = await runPart(name);
  const entry: Record<string, unknown> = {
    status: code === 0 ? 'ok' : 'failed',
    exitCode: code,
    seconds: +seconds.toFixed(1),
    command: `bun ${commands[name].join(' ')}`,
    log: join(partsDir, `${name}.log`),
  };
  let result: unknown;
  try {
    if (name === 'restart') {
      // bench/restart.ts prints its result as the last JSON object on stdout.
      const start = stdout.lastIndexOf('\n{');
      result = JSON.parse(stdout.slice(start >= 0 ? start + 1 : stdout.indexOf('{')));
    } else if (existsSync(json(name))) {
      result = JSON.parse(readFileSync(json(name), 'utf8'));
    }
  } catch (err) {
    entry.note = `results unreadable: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (result === undefined && code === 0) {
    // A part that had nothing to measure (e.g. SciFact missing for bench/fulltext.ts) exits 0 without results.
    entry.status = 'no results';
    entry.note ??= stdout.trim().split('\n').slice(-1)[0];
  }
  if (code !== 0) combined.problems.push(`part ${name} exited with code ${code} (log: ${entry.log})`);
  if (result !== undefined) combined[name] = result;
  for (const p of (result as { problems?: string[] } | undefined)?.problems ?? []) combined.problems.push(`${name}: ${p}`);
  combined.parts[name] = entry;
}

combined.seconds = +((performance.now() - started) / 1000).toFixed(1);
combined.summary = summaryRows(combined);
await Bun.write(`${out}.json`, `${JSON.stringify(combined, null, 2)}\n`);
await Bun.write(`${out}.html`, renderHtml(combined));
printSummary(combined);
for (const p of combined.problems) console.log(`  problem: ${p}`);
console.log(`\nTotal ${combined.seconds} s. Results: ${out}.json, report: ${out}.html`);
process.exit(Object.values<{ status: string }>(combined.parts).some((p) => p.status === 'failed') ? 1 : 0);
