// The combined benchmark results of bench/run.ts → a summary (printed) and a self-contained HTML
// page with inline SVG charts (no scripts, no CDN): latency against corpus size per search mode,
// the engine against its peers, HTTP throughput against the trivial-route floor, quality.
//
//   bun bench/report.ts .bench-out/bench.json [.bench-out/bench.html]
/* eslint-disable @typescript-eslint/no-explicit-any */

import { f3, fmtInt, fmtMs, kcount, pct } from './lib/format';

export type Combined = Record<string, any>;

// --- number formatting ------------------------------------------------------------------------

const fin = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
/** Seconds (not milliseconds, as secs() takes). */
const sec = (x: unknown) => (!fin(x) ? '-' : `${x.toFixed(1)} s`);
const esc = (s: unknown) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

// --- the summary ------------------------------------------------------------------------------

export interface SummaryRow {
  area: string;
  measure: string;
  value: string;
  note?: string;
}

/** Engine semantic/hybrid/brute-force latency at the measured size nearest to `chunks`. */
function nearestEnginePoint(r: Combined, chunks: number): any {
  const sizes: any[] = r.engine?.sizes ?? [];
  return sizes.reduce((best, p) => (!best || Math.abs(Math.log(p.chunks / chunks)) < Math.abs(Math.log(best.chunks / chunks)) ? p : best), undefined as any);
}

export function summaryRows(r: Combined): SummaryRow[] {
  const rows: SummaryRow[] = [];
  const add = (area: string, measure: string, value: string, note?: string) => rows.push({ area, measure, value, note });
  const lat = (l: any) => (l ? `${fmtMs(l.p50)} / ${fmtMs(l.p95)} / ${fmtMs(l.p99)} ms` : '-');

  for (const p of r.engine?.sizes ?? []) {
    for (const mode of ['full-text', 'semantic', 'hybrid', 'exact brute force']) {
      const l = p.latency?.[mode];
      if (l)
        add(
          'engine latency',
          `${mode} @ ${kcount(p.chunks)} chunks, p50/p95/p99`,
          lat(l),
          `${fmtInt(p.queriesPerSecond?.[mode])} q/s${mode === 'semantic' ? `, recall@10 ${f3(p.recall10)}` : ''}`,
        );
    }
  }
  for (const p of r.fulltext?.sizes ?? [])
    add('engine latency', `full-text (bench/fulltext.ts) @ ${kcount(p.chunks)} chunks, p50/p95/p99`, lat(p.latency), `${fmtInt(p.items)} items`);

  const ftl = r.fulltext?.latency;
  if (ftl) {
    add(
      'peers',
      `engine full-text @ ${kcount(ftl.chunks)} chunks (${ftl.replicas}×), p50/p99`,
      `${fmtMs(ftl.engine?.total?.p50)} / ${fmtMs(ftl.engine?.total?.p99)} ms`,
    );
    for (const p of ftl.peers ?? [])
      add(
        'peers',
        `${p.name} @ ${fmtInt(ftl.items)} items, p50/p99`,
        `${fmtMs(p.latency?.p50)} / ${fmtMs(p.latency?.p99)} ms`,
        `${p.timedQueries} queries; engine on the same: ${fmtMs(p.engine?.p50)} / ${fmtMs(p.engine?.p99)} ms`,
      );
  }
  for (const s of r.pglite?.sizes ?? []) {
    for (const [name, l] of Object.entries<any>(s.latency ?? {}))
      add('peers', `PGlite ${name} @ ${fmtInt(s.rows)} docs (${s.replicas}×), p50/p99`, `${fmtMs(l.p50)} / ${fmtMs(l.p99)} ms`, `${l.queries} queries`);
  }
  for (const e of r.pglite?.engine ?? [])
    add(
      'peers',
      `engine BM25 beside PGlite @ ${fmtInt(e.chunks)} chunks (${e.replicas}×), p50/p99`,
      `${fmtMs(e.latency?.p50)} / ${fmtMs(e.latency?.p99)} ms`,
      `${e.latency?.queries} queries`,
    );

  const h = r.http;
  if (h) {
    for (const t of h.table ?? []) {
      add(
        'http',
        `${t.route} c=${t.connections} (${t.tool})`,
        `${fmtInt(t.requestsPerSecond)} req/s, p50 ${fmtMs(t.latency?.p50)} ms, p99 ${fmtMs(t.latency?.p99)} ms`,
        [
          fin(t.floorRatio) ? `${pct(t.floorRatio)} of floor` : '',
          fin(t.engineRatio) ? `${pct(t.engineRatio)} of engine 1 thread` : '',
          `server ${fin(t.serverCores) ? t.serverCores.toFixed(2) : '-'} cores`,
        ]
          .filter(Boolean)
          .join('; '),
      );
    }
    const e = h.engineAlone;
    if (e)
      add(
        'http',
        `engine alone, same ${fmtInt(e.chunks)} chunks, full-text on one thread`,
        `${fmtInt(e.searchFullText?.queriesPerSecond)} q/s`,
        `index only ${fmtInt(e.indexSearch?.queriesPerSecond)} q/s`,
      );
    const t = h.target;
    if (t)
      add(
        'http',
        `target: full-text c=16 ÷ engine 1 thread ≥ 70%, p99 ≤ 10 ms`,
        `${pct(t.ratio)} (median of ${(t.rounds ?? []).length || 1} paired rounds), worst p99 ${fmtMs(t.p99Ms)} ms`,
        `${t.ratio >= t.ratioTarget ? 'ratio met' : 'ratio MISSED'}, ${t.p99Ms <= t.p99TargetMs ? 'p99 met' : 'p99 MISSED'} (${t.tool}; at ${fmtInt(h.settings?.targetChunks)} chunks)`,
      );
    const i = h.ingestion;
    if (i) {
      add(
        'ingestion',
        `POST contents (no wait), c=${i.connections}`,
        `${fmtInt(i.acksPerSecond)} acks/s`,
        `p50 ${fmtMs(i.ackLatency?.p50)} ms, p99 ${fmtMs(i.ackLatency?.p99)} ms`,
      );
      add(
        'ingestion',
        'chunks indexed (HTTP, stub embedder)',
        `${fmtInt(i.chunksIndexedPerSecond)} chunks/s`,
        `${fmtInt(i.chunks)} chunks in ${sec(i.indexedSeconds)}; HNSW graph ${sec(i.graphSeconds)} more`,
      );
    }
    if (h.restart)
      add(
        'restart',
        `server on ${fmtInt(h.ingestion?.chunks)} chunks with vectors (snapshot at shutdown + log)`,
        `${fmtInt(h.restart.readyMs)} ms to /ready`,
        `shutdown ${fmtInt(h.restart.shutdownMs)} ms; recovery ${fmtInt(h.restart.recovery?.millis)} ms`,
      );
    if (h.memory)
      add(
        'memory',
        'server RSS per chunk (loaded / after restart)',
        `${fmtInt(h.memory.bytesPerChunkLoaded)} / ${fmtInt(h.memory.bytesPerChunkAfterRestart)} B`,
        'includes 1,536 B of 384-d f32 vector',
      );
  }
  const rs = r.restart;
  if (rs)
    add(
      'restart',
      `server on ${fmtInt(rs.items)} items / ${fmtInt(rs.chunks)} chunks, full-text only (log replay, bench/restart.ts)`,
      `${fmtInt(rs.restartReadyMs)} ms to /ready`,
      `replay ${fmtInt(rs.replayMs)} ms, log ${rs.walMiB} MiB; engine ingest ${fmtInt(rs.items / rs.ingestIndexedSeconds)} items/s`,
    );
  for (const p of (r.engine?.sizes ?? []).slice(-1))
    add(
      'memory',
      `engine per chunk @ ${kcount(p.chunks)} (JS heap)`,
      `${fmtInt(p.heapBytesPerChunk)} B`,
      `vectors ${fmtInt(p.vectorBytesPerChunk)} B, postings ${fmtInt(p.postingBytesPerChunk)} B`,
    );

  for (const p of [...(r.scale?.sizes ?? []), ...(r.scale?.projections ?? [])]) {
    const kind = p.measured ? 'measured' : 'PROJECTED';
    const at = `@ ${kcount(p.chunks)} chunks (${kind})`;
    const mib = (b: unknown) => (fin(b) ? `${fmtInt(b / 2 ** 20)} MiB` : '-');
    add(
      'scale',
      `server RSS per chunk loaded / restarted ${at}`,
      `${fmtInt(p.memory?.bytesPerChunkLoaded)} / ${fmtInt(p.memory?.bytesPerChunkAfterRestart)} B`,
      `RSS loaded ${mib(p.memory?.rssLoaded)}; snapshot ${mib(p.disk?.snapshot?.total ?? p.snapshotBytes)}${p.measured ? `; load average ${p.loadAverage?.start}` : `; ${p.basis}`}`,
    );
    if (p.measured) {
      const sp = p.restart?.split ?? {};
      add(
        'scale',
        `bulk load through HTTP ${at}`,
        `${fmtInt(p.ingestion?.chunksIndexedPerSecond)} chunks/s`,
        `${sec(p.ingestion?.indexedSeconds)} until every item is ready, HNSW graph ${sec(p.ingestion?.graphSeconds)} more; ${p.ingestion?.connections} writers`,
      );
      add(
        'scale',
        `restart to /ready ${at}`,
        `${fmtInt(p.restart?.readyMs)} ms`,
        `runtime ${fmtInt(sp.runtimeStartMs)}, snapshot load ${fmtInt(sp.snapshotLoadMs)}, log replay ${fmtInt(sp.logReplayMs)}, other ${fmtInt(sp.otherRecoveryMs)}, models ${fmtInt(sp.modelsAndReadyMs)} ms; shutdown ${fmtInt(p.shutdownMs)} ms`,
      );
      for (const mode of ['full-text', 'semantic', 'hybrid']) {
        const h = p.latency?.http?.[mode];
        const e = p.latency?.engine?.[mode];
        add(
          'scale',
          `${mode} p50/p99 HTTP (engine) ${at}`,
          `${fmtMs(h?.p50)} / ${fmtMs(h?.p99)} ms`,
          `engine ${fmtMs(e?.p50)} / ${fmtMs(e?.p99)} ms${mode === 'semantic' ? `; recall@10 vs exact ${f3(p.recall10)}` : ''}`,
        );
      }
    } else {
      add(
        'scale',
        `bulk load / restart ${at}`,
        `${sec(p.loadSeconds)} / ${sec(p.restartReadyMs / 1000)}`,
        `HNSW graph ${sec(p.graphSeconds)} more; ${p.basis}`,
      );
    }
  }

  for (const q of r.fulltext?.quality?.comparison ?? [])
    add(
      'quality',
      `${q.name === 'engine' ? 'engine full-text' : q.name}`,
      `nDCG@10 ${f3(q.quality?.ndcg10)}`,
      `Recall@100 ${f3(q.quality?.recall100)}, ${q.quality?.queries} queries`,
    );
  for (const [mode, q] of Object.entries<any>(r.engine?.quality ?? {}))
    add(
      'quality',
      `engine ${mode}${mode === 'full-text' ? ' (bench/engine-modes.ts)' : ' (hashed embedder)'}`,
      `nDCG@10 ${f3(q.ndcg10)}`,
      `Recall@100 ${f3(q.recall100)}, ${q.queries} queries`,
    );
  for (const [name, q] of Object.entries<any>(r.pglite?.quality ?? {}))
    add(
      'quality',
      name === 'engine' ? 'engine BM25 (beside PGlite)' : `PGlite ${name}`,
      `nDCG@10 ${f3(q.ndcg10)}`,
      `Recall@100 ${f3(q.recall100)}, ${q.queries} queries`,
    );
  for (const m of r.semantic?.quality ?? []) {
    for (const row of m.rows ?? [])
      add(
        'quality',
        `${m.model?.model}: ${row.name}`,
        `nDCG@10 ${f3(row.quality?.ndcg10)}`,
        `Recall@100 ${f3(row.quality?.recall100)}, ${row.quality?.queries} queries`,
      );
  }
  for (const [name, p] of Object.entries<any>(r.parts ?? {})) add('run', `part ${name}`, p.status === 'ok' ? sec(p.seconds) : p.status, p.note);
  return rows;
}

export function printSummary(r: Combined): void {
  const rows = summaryRows(r);
  const header = ['area', 'measure', 'value', 'note'];
  const cells = [header, ...rows.map((x) => [x.area, x.measure, x.value, x.note ?? ''])];
  const widths = header.map((_, c) => Math.min(c === 3 ? 90 : 80, Math.max(...cells.map((row) => row[c]!.length))));
  console.log(
    `\nSummary (${r.mode}, ${r.date}; ${r.machine?.cores}× ${r.machine?.cpu}, Bun ${r.machine?.bun}, load average at start ${r.machine?.loadAverage?.join(' ')})`,
  );
  let last = '';
  cells.forEach((row, i) => {
    if (i > 1 && row[0] !== last) console.log('');
    last = row[0]!;
    console.log(
      '  ' +
        row
          .map((cell, c) => cell.padEnd(widths[c]!))
          .join('  ')
          .trimEnd(),
    );
    if (i === 0) console.log(`  ${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  });
}

// --- SVG charts -------------------------------------------------------------------------------

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];

interface Series {
  name: string;
  points: [number, number][];
  dashed?: boolean;
  /** Palette index (defaults to the series position). */
  color?: number;
}

function niceLogTicks(min: number, max: number): number[] {
  const ticks: number[] = [];
  for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= min * 0.999 && v <= max * 1.001) ticks.push(v);
    }
  }
  return ticks;
}

function niceLinearTicks(max: number): number[] {
  const step = 10 ** Math.floor(Math.log10(max / 4 || 1));
  const mult = [1, 2, 5, 10].find((m) => max / (m * step) <= 6) ?? 10;
  const ticks: number[] = [];
  for (let v = 0; v <= max * 1.0001; v += mult * step) ticks.push(+v.toPrecision(6));
  return ticks;
}

const tickLabel = (v: number) => (v >= 1000 ? kcount(v) : v >= 1 ? String(+v.toPrecision(3)) : String(+v.toPrecision(2)));

export function lineChart(opts: { title: string; series: Series[]; xLabel: string; yLabel: string; xLog?: boolean; yLog?: boolean }): string {
  const series = opts.series
    .map((s) => ({ ...s, points: s.points.filter(([x, y]) => fin(x) && fin(y) && (!opts.yLog || y > 0) && (!opts.xLog || x > 0)) }))
    .filter((s) => s.points.length > 0);
  if (series.length === 0) return `<p class="empty">${esc(opts.title)}: no data in this run.</p>`;
  const W = 640,
    H = 360,
    L = 64,
    R = 200,
    T = 34,
    B = 48;
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (opts.xLog) [x0, x1] = [x0 / 1.3, x1 * 1.3];
  else if (x0 === x1) [x0, x1] = [x0 * 0.9, x1 * 1.1 + 1];
  if (opts.yLog) [y0, y1] = [10 ** Math.floor(Math.log10(y0)), 10 ** Math.ceil(Math.log10(y1))];
  else [y0, y1] = [0, y1 * 1.1 || 1];
  const sx = (x: number) => L + (opts.xLog ? Math.log(x / x0) / Math.log(x1 / x0) : (x - x0) / (x1 - x0)) * (W - L - R);
  const sy = (y: number) => H - B - (opts.yLog ? Math.log(y / y0) / Math.log(y1 / y0) : (y - y0) / (y1 - y0)) * (H - T - B);
  const yTicks = opts.yLog ? niceLogTicks(y0, y1) : niceLinearTicks(y1);
  // Measured x values as ticks, dropping any closer than 40 px to the previous one.
  const xTicks: number[] = [];
  if (opts.xLog) {
    for (const t of [...new Set(xs)].sort((a, b) => a - b)) if (xTicks.length === 0 || sx(t) - sx(xTicks[xTicks.length - 1]!) >= 40) xTicks.push(t);
  } else xTicks.push(...niceLinearTicks(x1));
  const parts: string[] = [];
  parts.push(`<text x="${W / 2 - R / 2 + L / 2}" y="20" class="title">${esc(opts.title)}</text>`);
  for (const t of yTicks)
    parts.push(
      `<line x1="${L}" x2="${W - R}" y1="${sy(t)}" y2="${sy(t)}" class="grid"/><text x="${L - 6}" y="${sy(t) + 4}" class="tick" text-anchor="end">${tickLabel(t)}</text>`,
    );
  for (const t of xTicks)
    parts.push(
      `<line x1="${sx(t)}" x2="${sx(t)}" y1="${T}" y2="${H - B}" class="grid"/><text x="${sx(t)}" y="${H - B + 16}" class="tick" text-anchor="middle">${tickLabel(t)}</text>`,
    );
  parts.push(`<line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" class="axis"/><line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}" class="axis"/>`);
  parts.push(`<text x="${(L + W - R) / 2}" y="${H - 8}" class="label" text-anchor="middle">${esc(opts.xLabel)}</text>`);
  parts.push(`<text x="14" y="${(T + H - B) / 2}" class="label" text-anchor="middle" transform="rotate(-90 14 ${(T + H - B) / 2})">${esc(opts.yLabel)}</text>`);
  series.forEach((s, i) => {
    const color = PALETTE[(s.color ?? i) % PALETTE.length];
    const pts = [...s.points].sort((a, b) => a[0] - b[0]);
    parts.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2" ${s.dashed ? 'stroke-dasharray="5 4"' : ''} points="${pts.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ')}"/>`,
    );
    for (const [x, y] of pts)
      parts.push(
        `<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="3" fill="${color}"><title>${esc(s.name)}: ${tickLabel(x)} → ${fmtMs(y)}</title></circle>`,
      );
    const ly = T + 8 + i * 18;
    parts.push(
      `<line x1="${W - R + 12}" x2="${W - R + 32}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2" ${s.dashed ? 'stroke-dasharray="5 4"' : ''}/><text x="${W - R + 38}" y="${ly + 4}" class="legend">${esc(s.name)}</text>`,
    );
  });
  return `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(opts.title)}">${parts.join('')}</svg>`;
}

/** Horizontal bars, one group per label, one bar per series; log or linear x. */
export function barChart(opts: {
  title: string;
  labels: string[];
  series: { name: string; values: (number | undefined)[] }[];
  xLabel: string;
  xLog?: boolean;
  reference?: { value: number; name: string };
}): string {
  const vals = opts.series.flatMap((s) => s.values).filter((v): v is number => fin(v) && (!opts.xLog || v > 0));
  if (vals.length === 0) return `<p class="empty">${esc(opts.title)}: no data in this run.</p>`;
  const barH = 12,
    gap = 8;
  const groupH = opts.series.length * barH + gap;
  const L = Math.max(160, Math.min(330, 12 + 6.3 * Math.max(...opts.labels.map((l) => l.length)))),
    R = 90,
    T = 34,
    B = 44,
    W = 800;
  const H = T + B + opts.labels.length * groupH + (opts.series.length > 1 ? 20 : 0);
  let x0 = opts.xLog ? 10 ** Math.floor(Math.log10(Math.min(...vals))) : 0;
  let x1 = opts.xLog ? 10 ** Math.ceil(Math.log10(Math.max(...vals, opts.reference?.value ?? 0))) : Math.max(...vals, opts.reference?.value ?? 0) * 1.08;
  if (x0 === x1) [x0, x1] = [x0 / 10, x1 * 10];
  const sx = (x: number) => L + (opts.xLog ? Math.log(Math.max(x, x0) / x0) / Math.log(x1 / x0) : x / x1) * (W - L - R);
  const parts: string[] = [`<text x="${W / 2}" y="20" class="title" text-anchor="middle">${esc(opts.title)}</text>`];
  const ticks = opts.xLog ? niceLogTicks(x0, x1).filter((t) => Math.log10(t) % 1 === 0 || niceLogTicks(x0, x1).length < 8) : niceLinearTicks(x1);
  const plotBottom = T + opts.labels.length * groupH;
  for (const t of ticks)
    parts.push(
      `<line x1="${sx(t)}" x2="${sx(t)}" y1="${T}" y2="${plotBottom}" class="grid"/><text x="${sx(t)}" y="${plotBottom + 14}" class="tick" text-anchor="middle">${tickLabel(t)}</text>`,
    );
  parts.push(`<text x="${(L + W - R) / 2}" y="${plotBottom + 32}" class="label" text-anchor="middle">${esc(opts.xLabel)}</text>`);
  opts.labels.forEach((label, g) => {
    const gy = T + g * groupH;
    parts.push(`<text x="${L - 8}" y="${gy + (opts.series.length * barH) / 2 + 4}" class="tick" text-anchor="end">${esc(label)}</text>`);
    opts.series.forEach((s, i) => {
      const v = s.values[g];
      if (!fin(v) || (opts.xLog && v <= 0)) return;
      const color = PALETTE[i % PALETTE.length];
      const y = gy + i * barH;
      parts.push(
        `<rect x="${L}" y="${y}" width="${Math.max(1, sx(v) - L).toFixed(1)}" height="${barH - 2}" fill="${color}"><title>${esc(label)} · ${esc(s.name)}: ${fmtMs(v)}</title></rect>`,
      );
      parts.push(`<text x="${(sx(v) + 4).toFixed(1)}" y="${y + barH - 3}" class="value">${v >= 100 ? fmtInt(v) : fmtMs(v)}</text>`);
    });
  });
  if (opts.reference && fin(opts.reference.value)) {
    const x = sx(opts.reference.value);
    parts.push(
      `<line x1="${x}" x2="${x}" y1="${T - 4}" y2="${plotBottom}" stroke="#444" stroke-dasharray="4 3"/><text x="${x + 3}" y="${plotBottom - 4}" class="tick">${esc(opts.reference.name)}</text>`,
    );
  }
  if (opts.series.length > 1) {
    let lx = L;
    for (const [i, s] of opts.series.entries()) {
      parts.push(
        `<rect x="${lx}" y="${H - 16}" width="12" height="10" fill="${PALETTE[i % PALETTE.length]}"/><text x="${lx + 16}" y="${H - 7}" class="legend">${esc(s.name)}</text>`,
      );
      lx += 28 + s.name.length * 7.5;
    }
  }
  return `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(opts.title)}">${parts.join('')}</svg>`;
}

// --- the page ---------------------------------------------------------------------------------

function table(header: string[], rows: (string | number)[][], numeric = (i: number) => i > 0): string {
  return `<table><thead><tr>${header.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.map((c, i) => `<td${numeric(i) ? ' class="num"' : ''}>${esc(c)}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

export function renderHtml(r: Combined): string {
  const sections: string[] = [];
  const modes = ['full-text', 'semantic', 'hybrid', 'exact brute force'];
  const sizes: any[] = r.engine?.sizes ?? [];

  /** What the engine benchmark ran on, as it ran (a quick run samples; without SciFact the text is generated). */
  function corpusWords(corpus: { source?: string; documents?: number; queries?: number } | undefined): string {
    if (!corpus) return 'its queries';
    const counts = `${fmtInt(corpus.documents)} documents, ${fmtInt(corpus.queries)} queries`;
    return corpus.source === 'generated' ? `generated text (${counts}; SciFact was not found)` : `SciFact train (${counts})`;
  }

  // 1. Latency against corpus size.
  if (sizes.length || r.fulltext?.sizes) {
    const series: Series[] = [];
    modes.forEach((mode, m) => series.push({ name: `${mode} p50`, points: sizes.map((p) => [p.chunks, p.latency?.[mode]?.p50]), color: m }));
    modes.forEach((mode, m) => series.push({ name: `${mode} p99`, points: sizes.map((p) => [p.chunks, p.latency?.[mode]?.p99]), dashed: true, color: m }));
    const ft = (r.fulltext?.sizes ?? []) as any[];
    const ftSeries: Series[] = [
      { name: 'engine (modes) p50', points: sizes.map((p) => [p.chunks, p.latency?.['full-text']?.p50]) },
      { name: 'engine (modes) p99', points: sizes.map((p) => [p.chunks, p.latency?.['full-text']?.p99]), dashed: true, color: 0 },
      { name: 'fulltext.ts p50', points: ft.map((p) => [p.chunks, p.latency?.p50]), color: 1 },
      { name: 'fulltext.ts p99', points: ft.map((p) => [p.chunks, p.latency?.p99]), dashed: true, color: 1 },
    ];
    sections.push(`<h2 id="latency">Engine latency against corpus size</h2>
      <p>In process, no HTTP: each mode through <code>KnowledgeBase</code> with hits materialized, top 10, ${corpusWords(r.engine?.corpus)}; vectors from the hashed 384-d embedder (the query vector is precomputed, so semantic times are the engine's, not a model's). Semantic search goes through HNSW from ${fmtInt(5000)} vectors on (exact below), re-scored exactly. Solid: p50, dashed: p99.</p>
      ${lineChart({ title: 'Latency by mode (engine)', series, xLabel: 'chunks (log)', yLabel: 'ms (log)', xLog: true, yLog: true })}
      ${lineChart({ title: 'Full-text latency, both engine benchmarks', series: ftSeries, xLabel: 'chunks (log)', yLabel: 'ms (log)', xLog: true, yLog: true })}
      ${table(
        ['chunks', 'mode', 'p50 ms', 'p95 ms', 'p99 ms', 'queries/s', 'notes'],
        sizes.flatMap((p) =>
          modes.map((m) => [
            fmtInt(p.chunks),
            m,
            fmtMs(p.latency?.[m]?.p50),
            fmtMs(p.latency?.[m]?.p95),
            fmtMs(p.latency?.[m]?.p99),
            fmtInt(p.queriesPerSecond?.[m]),
            m === 'semantic' ? `recall@10 vs brute force ${f3(p.recall10)}` : m === 'exact brute force' ? `${p.bruteQueries} queries` : '',
          ]),
        ),
      )}`);
  }

  // 2. Engine against peers.
  const peerLabels: string[] = [];
  const p50: (number | undefined)[] = [];
  const p99: (number | undefined)[] = [];
  const addPeer = (label: string, l: any) => {
    if (!l) return;
    peerLabels.push(label);
    p50.push(l.p50);
    p99.push(l.p99);
  };
  const ftl = r.fulltext?.latency;
  if (ftl) {
    addPeer(`engine full-text (${kcount(ftl.chunks)} chunks)`, ftl.engine?.total);
    for (const p of ftl.peers ?? []) addPeer(`${p.name} (${kcount(ftl.items)} docs)`, p.latency);
  }
  const pgBig = (r.pglite?.sizes ?? []).slice(-1)[0];
  const engineBig = (r.pglite?.engine ?? []).slice(-1)[0];
  if (engineBig) addPeer(`engine BM25 beside PGlite (${kcount(engineBig.chunks)})`, engineBig.latency);
  if (pgBig) for (const [name, l] of Object.entries<any>(pgBig.latency ?? {})) addPeer(`PGlite ${name} (${kcount(pgBig.rows)})`, l);
  const near = pgBig ? nearestEnginePoint(r, pgBig.rows) : sizes[sizes.length - 1];
  if (near) {
    addPeer(`engine semantic HNSW (${kcount(near.chunks)})`, near.latency?.semantic);
    addPeer(`exact brute force, JS (${kcount(near.chunks)})`, near.latency?.['exact brute force']);
    addPeer(`engine hybrid (${kcount(near.chunks)})`, near.latency?.hybrid);
  }
  if (!ftl && !pgBig) {
    // Both peer benchmarks need SciFact's documents; without them only the engine's own points are left.
    sections.push(`<h2 id="peers">Engine and peers</h2>
      <p>No peer ran in this run: <code>bench/fulltext.ts</code> (Orama, MiniSearch) and <code>bench/peers-pglite.ts</code> (PostgreSQL, pgvector) compare on SciFact, which was not found (<code>../shared/eval/scifact-train</code>, or set <code>SCIFACT_DIR</code>). The engine's own latency is above.</p>`);
  } else if (peerLabels.length) {
    sections.push(`<h2 id="peers">Engine and peers, same data, same run</h2>
      <p>Full-text peers (Orama, MiniSearch) from <code>bench/fulltext.ts</code>, in the same process on the same documents; PostgreSQL full-text search and pgvector through PGlite (WASM, one thread) from <code>bench/peers-pglite.ts</code>; exact brute force over a flat Float32Array from <code>bench/engine-modes.ts</code>. Log scale.</p>
      ${barChart({
        title: 'Search latency, top 10 (ms, log scale)',
        labels: peerLabels,
        series: [
          { name: 'p50', values: p50 },
          { name: 'p99', values: p99 },
        ],
        xLabel: 'ms (log)',
        xLog: true,
      })}`);
  }
  if (r.pglite?.sizes?.length) {
    const pg = r.pglite;
    const names = Object.keys(pg.sizes[0].latency ?? {});
    sections.push(`<h3>PGlite (${esc(String(pg.postgres ?? '').replace(/ on wasm32.*/, ''))}, WASM, one thread)</h3>
      ${table(
        ['system', ...pg.sizes.flatMap((s: any) => [`${s.replicas}× p50 ms`, `${s.replicas}× p99 ms`, `${s.replicas}× queries`])],
        [
          ['engine BM25', ...(pg.engine ?? []).flatMap((e: any) => [fmtMs(e.latency?.p50), fmtMs(e.latency?.p99), e.latency?.queries])],
          ...names.map((n) => [
            `PGlite ${n}`,
            ...pg.sizes.flatMap((s: any) => [fmtMs(s.latency?.[n]?.p50), fmtMs(s.latency?.[n]?.p99), s.latency?.[n]?.queries ?? '-']),
          ]),
        ],
      )}
      ${table(
        ['size', 'rows', 'load s', 'GIN s', 'HNSW s', 'table + indexes MiB'],
        pg.sizes.map((s: any) => [
          `${s.replicas}×`,
          fmtInt(s.rows),
          sec(s.loadMs / 1000),
          sec(s.ginMs / 1000),
          fin(s.hnswMs) ? sec(s.hnswMs / 1000) : '-',
          fmtInt(s.tableBytes / 2 ** 20),
        ]),
      )}`);
  }

  // 3. HTTP.
  const h = r.http;
  if (h?.table?.length) {
    const routes: string[] = [...new Set<string>(h.table.map((t: any) => `${t.route} (${t.tool})`))];
    const conns: number[] = [...new Set<number>(h.table.map((t: any) => t.connections))];
    const value = (route: string, c: number, key: 'rps' | 'p99') => {
      const t = h.table.find((x: any) => `${x.route} (${x.tool})` === route && x.connections === c);
      return t ? (key === 'rps' ? t.requestsPerSecond : t.latency?.p99) : undefined;
    };
    const tg = h.target;
    sections.push(`<h2 id="http">Through HTTP</h2>
      <p>The real server (<code>bun src/main.ts</code>, LOG_LEVEL=warn, RATE_LIMIT_RPS=0) on ${fmtInt(h.ingestion?.chunks)} chunks; load from autocannon${(h.settings?.loadGenerators ?? []).includes('wrk') ? ' and wrk' : ''} on the same machine (${r.machine?.cores} cores shared by client and server). Embeddings: ${esc(h.settings?.embedding ?? '')}. The floor is <code>GET /health</code> of the same server in the same run.</p>
      ${tg ? `<p class="target">Full-text at concurrency 16: <b>${fmtInt(tg.httpRequestsPerSecond)} req/s</b> (${esc(tg.tool)}) = <b>${pct(tg.ratio)}</b> of the engine alone on one thread (${fmtInt(tg.engineQueriesPerSecond)} queries/s; target ≥ 70%: ${tg.ratio >= 0.7 ? 'met' : 'missed'}; median of ${(tg.rounds ?? []).length || 1} paired round(s): ${(tg.rounds ?? []).map((r: { ratio: number }) => pct(r.ratio)).join(', ')}), worst p99 <b>${fmtMs(tg.p99Ms)} ms</b> (target ≤ 10 ms: ${tg.p99Ms <= 10 ? 'met' : 'missed'}); HTTP floor ${fmtInt(tg.floorRequestsPerSecond)} req/s.</p>` : ''}
      ${barChart({ title: 'Throughput (req/s, log scale)', labels: routes, series: conns.map((c) => ({ name: `c=${c}`, values: routes.map((rt) => value(rt, c, 'rps')) })), xLabel: 'requests per second (log)', xLog: true, reference: h.engineAlone ? { value: h.engineAlone.searchFullText?.queriesPerSecond, name: 'engine full-text, 1 thread' } : undefined })}
      ${barChart({ title: 'p99 latency (ms, log scale)', labels: routes, series: conns.map((c) => ({ name: `c=${c}`, values: routes.map((rt) => value(rt, c, 'p99')) })), xLabel: 'ms (log)', xLog: true, reference: { value: 10, name: '10 ms' } })}
      ${table(
        ['route', 'tool', 'c', 'req/s', 'p50 ms', 'p99 ms', '÷ floor', '÷ engine 1 thread', 'server cores', 'client cores', 'non-2xx + errors'],
        h.table.map((t: any) => [
          t.route,
          t.tool,
          t.connections,
          fmtInt(t.requestsPerSecond),
          fmtMs(t.latency?.p50),
          fmtMs(t.latency?.p99),
          pct(t.floorRatio),
          pct(t.engineRatio),
          fin(t.serverCores) ? t.serverCores.toFixed(2) : '-',
          fin(t.clientCores) ? t.clientCores.toFixed(2) : '-',
          (t.non2xx ?? 0) + (t.errors ?? 0),
        ]),
      )}`);
    const prog: any[] = h.ingestion?.progress ?? [];
    if (prog.length) {
      sections.push(`<h3>Ingestion</h3>
        <p>${fmtInt(h.ingestion.items)} items posted without <code>wait</code> at concurrency ${h.ingestion.connections}: <b>${fmtInt(h.ingestion.acksPerSecond)} acknowledgements/s</b>; <b>${fmtInt(h.ingestion.chunksIndexedPerSecond)} chunks indexed/s</b> (${fmtInt(h.ingestion.chunks)} chunks in ${sec(h.ingestion.indexedSeconds)}, stub embedder); HNSW graph finished ${sec(h.ingestion.graphSeconds)} later. Restart on this directory: ${fmtInt(h.restart?.readyMs)} ms to <code>/ready</code>.</p>
        ${lineChart({
          title: 'Chunks searchable during the load',
          series: [
            { name: 'chunks', points: prog.map((p) => [p.t, p.chunks]) },
            { name: 'queue depth', points: prog.map((p) => [p.t, p.queue]) },
          ],
          xLabel: 'seconds since the first POST',
          yLabel: 'count',
        })}`);
    }
  }

  // 3b. Scale: one node at growing size (bench/scale.ts); projected sizes dashed.
  const sc = r.scale;
  if (sc?.sizes?.length) {
    const measured: any[] = sc.sizes;
    const projected: any[] = sc.projections ?? [];
    // A projected line starts at the largest measured point, so it reads as its continuation.
    const last = measured[measured.length - 1];
    const both = (get: (p: any) => number | undefined, name: string, color: number): Series[] => [
      { name: `${name}`, points: measured.map((p) => [p.chunks, get(p)] as [number, number]), color },
      { name: `${name} (projected)`, points: [last, ...projected].map((p) => [p.chunks, get(p)] as [number, number]), dashed: true, color },
    ];
    const modes3 = ['full-text', 'semantic', 'hybrid'];
    const mib = (b: unknown) => (fin(b) ? fmtInt(b / 2 ** 20) : '-');
    sections.push(`<h2 id="scale">One node at scale</h2>
      <p>The real server bulk-loaded through HTTP (${esc(sc.settings?.writers)} writers, no <code>wait</code>), searched through HTTP on one connection, stopped gracefully and restarted on its files; then the engine alone opened on the same directory. Embeddings: ${esc(sc.settings?.embedding ?? '')}. Dashed lines and “projected” rows are not measured: ${esc(sc.settings?.projection ?? '')}.</p>
      ${lineChart({ title: 'Server RSS per chunk (bytes)', series: [...both((p) => p.memory?.bytesPerChunkLoaded, 'after the load', 0), ...both((p) => p.memory?.bytesPerChunkAfterRestart, 'after a restart', 1)], xLabel: 'chunks (log)', yLabel: 'bytes per chunk', xLog: true })}
      ${lineChart({ title: 'Restart to /ready and bulk load (seconds)', series: [...both((p) => (fin(p.restart?.readyMs) ? p.restart.readyMs / 1000 : p.restartReadyMs / 1000), 'restart', 0), ...both((p) => p.ingestion?.indexedSeconds ?? p.loadSeconds, 'bulk load', 1)], xLabel: 'chunks (log)', yLabel: 's (log)', xLog: true, yLog: true })}
      ${lineChart({ title: 'Search latency through HTTP, p50 (ms)', series: modes3.flatMap((m, i) => both((p) => p.latency?.http?.[m]?.p50, m, i)), xLabel: 'chunks (log)', yLabel: 'ms (log)', xLog: true, yLog: true })}
      ${table(
        [
          'chunks',
          'kind',
          'RSS MiB',
          'B/chunk loaded',
          'B/chunk restarted',
          'snapshot MiB',
          'load s',
          'chunks/s',
          'graph s',
          'shutdown s',
          'restart s',
          'load average',
        ],
        [
          ...measured.map((p) => [
            fmtInt(p.chunks),
            'measured',
            mib(p.memory?.rssLoaded),
            fmtInt(p.memory?.bytesPerChunkLoaded),
            fmtInt(p.memory?.bytesPerChunkAfterRestart),
            mib(p.disk?.snapshot?.total),
            sec(p.ingestion?.indexedSeconds),
            fmtInt(p.ingestion?.chunksIndexedPerSecond),
            sec(p.ingestion?.graphSeconds),
            sec(p.shutdownMs / 1000),
            sec(p.restart?.readyMs / 1000),
            Object.values<number>(p.loadAverage ?? {}).join(' '),
          ]),
          ...projected.map((p) => [
            fmtInt(p.chunks),
            'projected',
            mib(p.memory?.rssLoaded),
            fmtInt(p.memory?.bytesPerChunkLoaded),
            fmtInt(p.memory?.bytesPerChunkAfterRestart),
            mib(p.snapshotBytes),
            sec(p.loadSeconds),
            fmtInt(p.chunks / p.loadSeconds),
            sec(p.graphSeconds),
            sec(p.shutdownMs / 1000),
            sec(p.restartReadyMs / 1000),
            '',
          ]),
        ],
        (i) => i !== 1,
      )}
      <h3>Where a restart's milliseconds go</h3>
      ${table(
        [
          'chunks',
          'to /ready',
          'runtime start',
          'snapshot load',
          'log replay',
          'other recovery',
          'models + ready',
          'records replayed',
          'first full-text',
          'first semantic',
        ],
        measured.map((p) => {
          const s = p.restart?.split ?? {};
          return [
            fmtInt(p.chunks),
            fmtInt(p.restart?.readyMs),
            fmtInt(s.runtimeStartMs),
            fmtInt(s.snapshotLoadMs),
            fmtInt(s.logReplayMs),
            fmtInt(s.otherRecoveryMs),
            fmtInt(s.modelsAndReadyMs),
            fmtInt(p.restart?.recovery?.records),
            fmtMs(p.restart?.firstSearchMs?.['full-text']),
            fmtMs(p.restart?.firstSearchMs?.semantic),
          ];
        }),
      )}
      <h3>Where a chunk's bytes go (engine alone on the same files)</h3>
      ${table(
        ['chunks', 'RSS growth', 'vector rows', 'HNSW graph', 'BM25 postings', 'rest', 'JS heap', 'f32 vector'],
        measured.map((p) => {
          const e = p.memory?.engineAlone?.perChunk ?? {};
          return [
            fmtInt(p.chunks),
            fmtInt(e.rss),
            fmtInt(e.vectorRows),
            fmtInt(e.hnswGraph),
            fmtInt(e.bm25Postings),
            fmtInt(e.rest),
            fmtInt(e.jsHeap),
            fmtInt(p.memory?.f32VectorBytesPerChunk),
          ];
        }),
      )}
      <h3>Search latency, top 10, p50 / p99 ms</h3>
      ${table(
        ['chunks', 'kind', ...modes3.flatMap((m) => [`HTTP ${m}`, `engine ${m}`]), 'recall@10'],
        [
          ...measured.map((p) => [
            fmtInt(p.chunks),
            'measured',
            ...modes3.flatMap((m) => [
              `${fmtMs(p.latency?.http?.[m]?.p50)} / ${fmtMs(p.latency?.http?.[m]?.p99)}`,
              `${fmtMs(p.latency?.engine?.[m]?.p50)} / ${fmtMs(p.latency?.engine?.[m]?.p99)}`,
            ]),
            f3(p.recall10),
          ]),
          ...projected.map((p) => [
            fmtInt(p.chunks),
            'projected',
            ...modes3.flatMap((m) => [
              `${fmtMs(p.latency?.http?.[m]?.p50)} / ${fmtMs(p.latency?.http?.[m]?.p99)}`,
              `${fmtMs(p.latency?.engine?.[m]?.p50)} / ${fmtMs(p.latency?.engine?.[m]?.p99)}`,
            ]),
            '-',
          ]),
        ],
        (i) => i !== 1,
      )}`);
  }

  // 4. Quality.
  const qLabels: string[] = [];
  const ndcg: (number | undefined)[] = [];
  const recall: (number | undefined)[] = [];
  const addQ = (label: string, q: any) => {
    if (!q) return;
    qLabels.push(label);
    ndcg.push(q.ndcg10);
    recall.push(q.recall100);
  };
  for (const q of r.fulltext?.quality?.comparison ?? []) addQ(q.name === 'engine' ? 'engine full-text' : q.name, q.quality);
  for (const [mode, q] of Object.entries<any>(r.engine?.quality ?? {})) if (mode !== 'full-text') addQ(`engine ${mode} (hashed vectors)`, q);
  for (const [name, q] of Object.entries<any>(r.pglite?.quality ?? {})) if (name !== 'engine') addQ(`PGlite ${name}`, q);
  for (const m of r.semantic?.quality ?? [])
    for (const row of m.rows ?? [])
      if (/^(semantic \(engine|hybrid weighted w=0\.5|hybrid rrf)/.test(row.name)) addQ(`${m.model?.model}: ${row.name}`, row.quality);
  if (qLabels.length) {
    sections.push(`<h2 id="quality">Quality on SciFact train</h2>
      <p>nDCG@10 and Recall@100 over the judged training queries (chunk hits folded into documents by their best chunk). Semantic and hybrid rows marked “hashed vectors” use the benchmark's lexical hash embedder, not a neural model${r.semantic ? '; rows named after a model come from <code>bench/semantic.ts</code>' : ''}.</p>
      ${barChart({
        title: 'Quality (higher is better)',
        labels: qLabels,
        series: [
          { name: 'nDCG@10', values: ndcg },
          { name: 'Recall@100', values: recall },
        ],
        xLabel: 'score',
      })}`);
  }

  // 5. Everything as rows, and the run.
  const rows = summaryRows(r);
  sections.push(
    `<h2 id="summary">All numbers</h2>${table(
      ['area', 'measure', 'value', 'note'],
      rows.map((x) => [x.area, x.measure, x.value, x.note ?? '']),
      (i) => i === 2,
    )}`,
  );
  if (r.problems?.length) sections.push(`<h2 id="problems">Problems noticed</h2><ul>${r.problems.map((p: string) => `<li>${esc(p)}</li>`).join('')}</ul>`);

  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kb-search benchmark ${esc(r.date ?? '')}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:24px auto;max-width:1000px;padding:0 16px;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:36px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:15px}
table{border-collapse:collapse;margin:10px 0 18px;font-size:12.5px}th,td{border:1px solid #ddd;padding:3px 7px;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}
svg{display:block;margin:10px 0;max-width:100%;height:auto}svg .title{font-weight:600;font-size:13px}svg .tick{font-size:11px;fill:#555}svg .label{font-size:12px;fill:#333}
svg .legend{font-size:11.5px;fill:#222}svg .value{font-size:10px;fill:#333}svg .grid{stroke:#eee}svg .axis{stroke:#999}
.meta{color:#555}.target{background:#f6f8fa;border-left:3px solid #1f77b4;padding:6px 10px}.empty{color:#888;font-style:italic}code{background:#f4f4f4;padding:0 3px}
</style></head><body>
<h1>kb-search benchmark</h1>
<p class="meta">${esc(r.mode)} run, ${esc(r.date)} · ${esc(r.machine?.cores)}× ${esc(r.machine?.cpu)}, Bun ${esc(r.machine?.bun)} · load average at start ${esc(r.machine?.loadAverage?.join(' ') ?? '-')} · total ${sec(r.seconds)} · <code>${esc(r.command ?? '')}</code></p>
<p>Parts: ${Object.entries<any>(r.parts ?? {})
    .map(([k, p]) => `${esc(k)} ${p.status === 'ok' ? sec(p.seconds) : esc(p.status)}`)
    .join(' · ')}</p>
${sections.join('\n')}
</body></html>
`;
}

if (import.meta.main) {
  const [input, output] = Bun.argv.slice(2);
  if (!input) {
    console.error('usage: bun bench/report.ts <results.json> [out.html]');
    process.exit(2);
  }
  const r = (await Bun.file(input).json()) as Combined;
  printSummary(r);
  const out = output ?? `${input.replace(/\.json$/, '')}.html`;
  await Bun.write(out, renderHtml(r));
  console.log(`\nHTML report: ${out}`);
}
