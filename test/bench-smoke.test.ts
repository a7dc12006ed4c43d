// Smoke test of `bun run bench --quick`: every default part runs, and the combined JSON and the
// HTML report are written with their top-level sections. No threshold is asserted: numbers from a
// shared CI machine say nothing about regressions.
import { expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dir, '..');
const SCIFACT = existsSync(join(process.env.SCIFACT_DIR ?? join(ROOT, '..', 'shared', 'eval', 'scifact-train'), 'corpus.jsonl'));

test(
  'bun bench/run.ts --quick exits 0 and writes JSON and HTML with every section',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kb-bench-smoke-'));
    try {
      const out = join(dir, 'bench');
      const proc = Bun.spawn(['bun', 'bench/run.ts', '--quick', '--out', out], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' });
      const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
      const code = await proc.exited;
      if (code !== 0) throw new Error(`bench/run.ts --quick exited ${code}:\n${stdout.slice(-4000)}\n${stderr.slice(-2000)}`);
      expect(stdout).toContain('Summary (quick');

      const json = (await Bun.file(`${out}.json`).json()) as Record<string, any>;
      expect(json.kind).toBe('kb-search benchmark');
      expect(json.mode).toBe('quick');
      for (const key of ['machine', 'parts', 'summary', 'problems', 'engine', 'http', 'restart', 'pglite']) expect(json).toHaveProperty(key);
      for (const part of ['engine', 'http', 'restart', 'pglite']) expect(json.parts[part].status).toBe('ok');
      // bench/fulltext.ts has nothing to measure without SciFact (it exits 0 with no results).
      if (SCIFACT) {
        expect(json.parts.fulltext.status).toBe('ok');
        expect(json).toHaveProperty('fulltext');
        expect(json.engine.quality).toHaveProperty('semantic');
        expect(json.pglite.quality).toHaveProperty('engine');
      }
      expect(json.engine.sizes.length).toBeGreaterThanOrEqual(2);
      for (const mode of ['full-text', 'semantic', 'hybrid', 'exact brute force']) expect(json.engine.sizes[0].latency[mode].p99).toBeGreaterThan(0);
      const routes = new Set(json.http.table.map((r: { route: string }) => r.route));
      for (const route of ['GET /health (floor)', 'full-text', 'semantic', 'hybrid']) expect(routes.has(route)).toBe(true);
      expect(json.http.ingestion.acksPerSecond).toBeGreaterThan(0);
      expect(json.http.ingestion.chunksIndexedPerSecond).toBeGreaterThan(0);
      expect(json.http.engineAlone.searchFullText.queriesPerSecond).toBeGreaterThan(0);
      expect(json.http.restart.readyMs).toBeGreaterThan(0);
      expect(json.restart.restartReadyMs).toBeGreaterThan(0);
      expect(json.summary.length).toBeGreaterThan(10);

      const html = await Bun.file(`${out}.html`).text();
      expect(html.startsWith('<!doctype html>')).toBe(true);
      for (const id of ['latency', 'peers', 'http', 'summary']) expect(html).toContain(`id="${id}"`);
      if (SCIFACT) expect(html).toContain('id="quality"');
      // The report says what the engine part ran on, as it ran (the quick sample, or generated text).
      const { documents, queries } = json.engine.corpus;
      expect(html).toContain(
        SCIFACT ? `SciFact train (${documents.toLocaleString('en-US')} documents, ${queries.toLocaleString('en-US')} queries)` : 'generated text (',
      );
      if (!SCIFACT) expect(html).toContain('No peer ran in this run');
      expect(html).toContain('<svg');
      // Self-contained: no scripts, nothing fetched from elsewhere.
      expect(html).not.toMatch(/<script|<link |src="http/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
  // About two minutes alone; five seen while other suites loaded the machine (it timed out at 180 s).
  { timeout: 600_000 },
);

// The scale part is not in the default parts (minutes at its real sizes); --quick runs it at 2k
// chunks: load, search, shutdown, restart and the engine alone, in about 20 s.
test(
  'bun bench/run.ts --quick --parts scale measures one tiny size and projects 1M and 10M',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kb-bench-scale-smoke-'));
    try {
      const out = join(dir, 'bench');
      const proc = Bun.spawn(['bun', 'bench/run.ts', '--quick', '--parts', 'scale', '--out', out], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' });
      const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
      const code = await proc.exited;
      if (code !== 0) throw new Error(`bench/run.ts --quick --parts scale exited ${code}:\n${stdout.slice(-4000)}\n${stderr.slice(-2000)}`);
      const json = (await Bun.file(`${out}.json`).json()) as Record<string, any>;
      expect(json.parts.scale.status).toBe('ok');
      const [point] = json.scale.sizes;
      expect(point.measured).toBe(true);
      expect(point.chunks).toBeGreaterThanOrEqual(2000);
      expect(point.ingestion.failed).toBe(0);
      expect(point.memory.bytesPerChunkLoaded).toBeGreaterThan(0);
      expect(point.disk.snapshot.total).toBeGreaterThan(0);
      expect(point.restart.readyMs).toBeGreaterThan(0);
      for (const mode of ['full-text', 'semantic', 'hybrid']) expect(point.latency.http[mode].p99).toBeGreaterThan(0);
      expect(point.recall10).toBeGreaterThan(0.5);
      // One measured size: nothing to project from, and the projections say so by being empty of numbers.
      expect(json.scale.projections.map((p: { chunks: number; measured: boolean }) => [p.chunks, p.measured])).toEqual([
        [1_000_000, false],
        [10_000_000, false],
      ]);
      expect(json.summary.some((row: { area: string }) => row.area === 'scale')).toBe(true);
      expect(await Bun.file(`${out}.html`).text()).toContain('id="scale"');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
  { timeout: 120_000 },
);
