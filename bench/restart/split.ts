// Where the seconds of a restart from a snapshot go, in process, on a data directory that holds
// one (bench/restart/build-base.ts makes one):
//   bun bench/restart/split.ts [--dir .bench-out/restart/base-100000] [--no-vectors] [--real]
// A snapshot with index dumps (snapshots/index-dump.ts) has them read ('read index dumps'), its
// dumped sets' indexed records decoded without terms and the dumps loaded after the records, as
// the server does (the base build-base.ts writes has none: copy one through a shutdown to get them).
// Default: the phases one after the other, each whole — verify (manifest, sizes, SHA-256 of the
// graph files), read records.log, CRC (scanFrames), decode (payloads to records), apply (per record
// type, into the engine's state), graph attach and the rest of Engine.open, a full GC; RSS after
// each. `--no-vectors`: indexed records applied without their vectors (splits the vector adds out).
// `--real`: the engine opened as the server opens it (openEngine), its recovery report, wall and
// CPU time and peak RSS (VmHWM). Works on the code before the binary snapshot records too (decodePayload).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as engineLib from '../../engine';
import { Engine, scanFrames, type LogRecord } from '../../engine';
import { listSnapshotDirs, openEngine, RECORDS_FILE, verifySnapshot } from '../../snapshots';
import { BENCH_OUT } from '../lib/paths';

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: { dir: { type: 'string' }, 'no-vectors': { type: 'boolean', default: false }, real: { type: 'boolean', default: false } },
});
const dataDir = values.dir ?? join(BENCH_OUT, 'restart', 'base-100000');
const mib = (n: number) => Math.round(n / 2 ** 20);
const peakRss = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;

if (values.real) {
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const { engine } = await openEngine({ dataDir, log: () => {}, holdIngestion: true });
  const wallMs = Math.round(performance.now() - t0);
  // CPU time of the open (every thread of the process): steadier than wall time on a shared machine.
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = Math.round((cpu.user + cpu.system) / 1000);
  const t1 = performance.now();
  Bun.gc(true);
  const gcMs = Math.round(performance.now() - t1);
  console.log(
    JSON.stringify({ dataDir, wallMs, cpuMs, gcMs, peakRssMiB: mib(peakRss()), rssMiB: mib(process.memoryUsage.rss()), recovery: engine.recovery }, null, 2),
  );
  await engine.close();
  process.exit(0);
}

const ms: Record<string, number> = {};
const rss: Record<string, number> = {};
let t = performance.now();
const lap = (name: string) => {
  const now = performance.now();
  ms[name] = Math.round(now - t);
  rss[name] = mib(process.memoryUsage.rss());
  t = now;
};

const [snap] = await listSnapshotDirs(join(dataDir, 'snapshots'));
if (!snap) throw new Error(`no snapshot under ${dataDir}`);
// Record files only size-checked, as the server does (the option's form changed with incremental snapshots).
const check = await verifySnapshot(snap.dir, ((engineLib as Record<string, unknown>).PayloadDecoder ? { framed: true } : { framed: [RECORDS_FILE] }) as never);
if (!check.ok) throw new Error(check.reason);
lap('verify');
// Every record file (an incremental snapshot's tails too), whole.
const files = [RECORDS_FILE, ...((check.manifest as { tails?: string[] }).tails ?? [])];
const buffers = await Promise.all(files.map(async (f) => new Uint8Array(await Bun.file(join(snap.dir, f)).arrayBuffer())));
const bytes = { length: buffers.reduce((n, b) => n + b.length, 0) };
lap('read');
const scan = { frames: buffers.flatMap((b) => scanFrames(b).frames) };
lap('crc');
// Index dumps, read as the server reads them (code that has them: snapshots/index-dump.ts).
type Dumped = { kbId: string; configId: string; dump: unknown };
const dumpCode = await import('../../snapshots/index-dump').catch(() => undefined);
const manifestIndexes = (check.manifest as { indexes?: { kbId: string; configId: string; file: string }[] }).indexes ?? [];
const indexes: Dumped[] = dumpCode
  ? manifestIndexes.map((d) => ({
      kbId: d.kbId,
      configId: d.configId,
      dump: dumpCode.readIndexDump(
        join(snap.dir, d.file),
        d.kbId,
        d.configId,
        check.manifest.files.find((f) => f.name === d.file),
      ),
    }))
  : [];
lap('read index dumps');
// The binary snapshot records need the dictionary before them (PayloadDecoder); older code has only decodePayload.
const Decoder = (engineLib as Record<string, any>).PayloadDecoder;
const decoder = Decoder ? new Decoder() : { decode: engineLib.decodePayload };
// Indexed records of a dumped set: their head only, as the server decodes them.
const dumped = new Set(indexes.map((d) => `${d.kbId} ${d.configId}`));
const decoded: { record: LogRecord; attachment: Uint8Array }[] = [];
for (const f of scan.frames) {
  let d = dumped.size > 0 ? decoder.decodeHead(f.payload) : decoder.decode(f.payload);
  const r = d?.record as { t?: string; kbId?: string; configId?: string } | undefined;
  if (dumped.size > 0 && r?.t === 'content.indexed' && !(r.configId !== undefined && dumped.has(`${r.kbId} ${r.configId}`))) d = decoder.decode(f.payload);
  if (d) decoded.push(d);
}
lap('decode');
const byType: Record<string, { n: number; ms: number }> = {};
const engine = await Engine.open({
  dataDir,
  log: () => {},
  holdIngestion: true,
  startFrom: async () => ({
    seq: check.manifest.seq,
    records: decoded.length,
    replay(apply) {
      t = performance.now();
      for (const { record, attachment } of decoded) {
        const s = performance.now();
        apply(record, values['no-vectors'] ? new Uint8Array(0) : attachment);
        const e = byType[record.t] ?? (byType[record.t] = { n: 0, ms: 0 });
        e.n++;
        e.ms += performance.now() - s;
      }
      lap('apply');
    },
    graphs: values['no-vectors'] ? [] : check.manifest.graphs.map((g) => ({ kbId: g.kbId, path: join(snap.dir, g.file) })),
    ...(indexes.length > 0 ? { indexes: indexes as never } : {}),
  }),
});
lap('graph attach + log open');
decoded.length = 0;
Bun.gc(true);
lap('gc');
console.log(
  JSON.stringify(
    {
      dataDir,
      format: check.manifest.format,
      frames: scan.frames.length,
      recordsMiB: mib(bytes.length),
      chunks: check.manifest.stats.chunks,
      ms,
      totalMs: Object.values(ms).reduce((a, b) => a + b, 0),
      rssMiB: rss,
      peakRssMiB: mib(peakRss()),
      applyByType: Object.fromEntries(Object.entries(byType).map(([k, v]) => [k, { n: v.n, ms: Math.round(v.ms) }])),
    },
    null,
    2,
  ),
);
await engine.close();
