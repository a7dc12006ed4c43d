// The command-line client (src/cli), end to end against a real server: knowledge bases, ingesting a
// folder (walked, hidden entries skipped, a PDF among the files), a rerun that skips what is already
// there, failures summed up with exit code 1, search tables, export as JSON Lines, help for every
// command, and errors without stack traces.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { textPdf } from './extract/fixtures';
import { freePort } from './helpers/s3';
import { combineFilters } from '../src/cli/main';
import { KEY, ORG, TestServer } from './helpers/server';

const ROOT = resolve(import.meta.dir, '..');
const work = mkdtempSync(join(tmpdir(), 'kb-cli-'));
let server: TestServer;

function cli(args: string[], env: Record<string, string> = {}) {
  const run = Bun.spawnSync(['bun', join(ROOT, 'src', 'cli', 'main.ts'), ...args], {
    cwd: work,
    env: { ...process.env, KB_URL: server.url, KB_ORG: ORG, KB_KEY: KEY, ...env },
  });
  const stdout = run.stdout.toString();
  const stderr = run.stderr.toString();
  expect(stderr).not.toMatch(/^\s+at /m); // never a stack trace
  return { code: run.exitCode, stdout, stderr };
}

beforeAll(async () => {
  server = await TestServer.start();
  const docs = join(work, 'docs');
  mkdirSync(join(docs, 'policies'), { recursive: true });
  mkdirSync(join(docs, '.git'));
  writeFileSync(join(docs, 'refunds.md'), '# Refunds\n\nRefunds are issued within 14 days of purchase.\n');
  writeFileSync(join(docs, 'policies', 'shipping.txt'), 'Shipping takes three to five business days.\n');
  writeFileSync(join(docs, 'policies', 'refunds-copy.md'), '# Refunds\n\nRefunds are issued within 14 days of purchase.\n');
  writeFileSync(join(docs, 'policies', 'warranty.pdf'), await textPdf([[['The warranty covers manufacturing defects for two years.']]]));
  writeFileSync(join(docs, '.git', 'config'), 'hidden');
});
afterAll(async () => {
  await server.stop();
  server.cleanup();
  rmSync(work, { recursive: true, force: true });
});

describe('a folder from nothing to searchable', () => {
  let kb = '';

  test('kb create prints the id; kb list shows it', () => {
    const created = cli(['kb', 'create', 'Handbook', '--type', 'TEXT_HIGH_QUALITY']);
    expect(created.code).toBe(0);
    kb = created.stdout.trim();
    expect(kb).toMatch(/^kb_[0-9a-f]{28}$/);
    const list = cli(['kb', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^id\s+name\s+model\s+created$/m);
    expect(list.stdout).toMatch(new RegExp(`^${kb}\\s+Handbook\\s+Xenova/all-MiniLM-L6-v2\\s+\\d{4}-`, 'm'));
  });

  test('ingest uploads the folder, waits for indexing, and sums up', () => {
    const run = cli(['ingest', 'docs', '--kb', kb, '--concurrency', '2']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('4 files: 3 uploaded, 1 skipped (already in the knowledge base), 0 not readable by the server, 0 failed to upload');
    expect(run.stdout).toContain('indexed: 3 ready, 0 failed');
    expect(run.stderr).toMatch(/upload \|.*\| 4\/4 files/); // the progress bars (plain lines when not a terminal)
  }, 60_000);

  test('a rerun skips everything already there', () => {
    const run = cli(['ingest', 'docs', '--kb', kb]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('4 files: 0 uploaded, 4 skipped');
    // The index bar counts this run's items only: none here, so none is shown.
    expect(run.stderr).not.toMatch(/index \|/);
  });

  test('search prints a table of hits; filters and modes apply', () => {
    const hybrid = cli(['search', 'money back', '--kb', kb]);
    expect(hybrid.code).toBe(0);
    expect(hybrid.stdout.split('\n')[0]).toMatch(/^#\s+score\s+full-text\s+semantic\s+content\s+text$/);
    expect(hybrid.stdout).toContain('Refunds are issued within 14 days of purchase.');
    // Which model's vectors answered.
    expect(hybrid.stderr).toContain('model: Xenova/all-MiniLM-L6-v2');
    const filtered = cli(['search', 'days', '--kb', kb, '--mode', 'full-text', '--filter', 'path=docs/policies/shipping.txt']);
    expect(filtered.code).toBe(0);
    expect(filtered.stdout).toContain('Shipping takes three to five business days.');
    expect(filtered.stdout).not.toContain('Refunds');
    const pdf = cli(['search', 'warranty', '--kb', kb, '--mode', 'semantic', '--limit', '1']);
    expect(pdf.stdout).toContain('The warranty covers manufacturing defects for two years.');
    expect(cli(['search', 'nothing matches this', '--kb', kb, '--mode', 'full-text']).stdout.trim()).toBe('no hits');
  });

  test('search --highlight shows the snippet with the matched words marked; --min-score and --per-content apply', () => {
    const marked = cli(['search', 'refunds', '--kb', kb, '--mode', 'full-text', '--highlight']);
    expect(marked.code).toBe(0);
    expect(marked.stdout).toContain('«Refunds» are issued within 14 days of purchase.');
    const all = cli(['search', 'days', '--kb', kb, '--mode', 'full-text']).stdout.trim().split('\n').slice(2);
    expect(all.length).toBeGreaterThan(1);
    const best = Number(all[0]!.split(/\s+/)[1]);
    const above = cli(['search', 'days', '--kb', kb, '--mode', 'full-text', '--min-score', String(best)])
      .stdout.trim()
      .split('\n')
      .slice(2);
    expect(above.length).toBeLessThan(all.length);
    expect(cli(['search', 'days', '--kb', kb, '--mode', 'full-text', '--per-content', '1']).code).toBe(0);
    const bad = cli(['search', 'days', '--kb', kb, '--min-score', 'high']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('must be a number');
  });

  test('search tolerates a typo unless --no-typos', () => {
    expect(cli(['search', 'refnuds', '--kb', kb, '--mode', 'full-text']).stdout).toContain('Refunds are issued');
    expect(cli(['search', 'refnuds', '--kb', kb, '--mode', 'full-text', '--no-typos']).stdout.trim()).toBe('no hits');
  });

  test('export writes every item as a JSON line, with its metadata', () => {
    const out = join(work, 'export.jsonl');
    const run = cli(['export', '--kb', kb, '--out', out]);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('3 items written');
    const items = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(items.map((i) => i.metadata.path).sort()).toEqual(['docs/policies/refunds-copy.md', 'docs/policies/shipping.txt', 'docs/policies/warranty.pdf']); // the first of two equal files (walk order) is kept
    for (const item of items) expect(item.metadata.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(cli(['export', '--kb', kb]).stdout.trim().split('\n')).toHaveLength(3);
  });

  test('kb delete needs --yes', () => {
    const refused = cli(['kb', 'delete', kb]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('add --yes to confirm');
    expect(cli(['kb', 'delete', kb, '--yes']).code).toBe(0);
    expect(cli(['kb', 'list']).stdout).not.toContain(kb);
  });
});

describe('search: JSON filters with operators, several filters, neighbouring chunks', () => {
  let kb = '';
  // Numbered sentences, long enough for several chunks; "zebra" only in the middle.
  const long = Array.from({ length: 120 }, (_, i) =>
    i === 60 ? 'A zebra crossed the handbook at line 60.' : `Handbook line ${i} says nothing in particular.`,
  ).join(' ');

  beforeAll(() => {
    kb = cli(['kb', 'create', 'Filters']).stdout.trim();
    const lines = [
      { text: 'Refund rules of 2019 by the billing team.', metadata: { year: 2019, team: 'billing' } },
      { text: 'Refund rules of 2021 by the support team.', metadata: { year: 2021, team: 'support', tags: ['faq'] } },
      { text: 'Refund rules of 2023 by the billing team.', metadata: { year: 2023, team: 'billing' } },
      { text: 'Refund rules of 2025 by the legal team.', metadata: { year: 2025, team: 'legal', tags: ['faq', 'policy'] } },
      { text: long, metadata: { kind: 'handbook' } },
    ];
    writeFileSync(join(work, 'filters.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n'));
    expect(cli(['import', kb, 'filters.jsonl']).code).toBe(0);
  }, 60_000);

  const years = (...args: string[]) => {
    const run = cli(['search', 'refund rules', '--kb', kb, '--mode', 'full-text', ...args]);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    return [...run.stdout.matchAll(/Refund rules of (\d{4})/g)].map((m) => Number(m[1])).sort();
  };

  test('--filter takes a JSON object with operators, alone or with key=value pairs and other objects (all must hold)', () => {
    expect(years()).toEqual([2019, 2021, 2023, 2025]);
    expect(years('--filter', '{"year":{"$gte":2021}}')).toEqual([2021, 2023, 2025]);
    expect(years('--filter', '{"year":{"$gte":2021}}', '--filter', 'team=billing')).toEqual([2023]);
    expect(years('--filter', '{"$or":[{"team":"legal"},{"year":{"$lt":2020}}]}')).toEqual([2019, 2025]);
    expect(years('--filter', '{"team":{"$in":["support","legal"]}}', '--filter', '{"year":{"$lt":2025}}')).toEqual([2021]);
    expect(years('--filter', '{"tags":{"$exists":false}}', '--filter', 'team=billing')).toEqual([2019, 2023]);
    // A key given twice as a pair: both must hold (tags holds both), neither replaces the other.
    expect(years('--filter', 'tags=faq', '--filter', 'tags=policy')).toEqual([2025]);
    expect(years('--filter', 'team=billing', '--filter', 'year=2023')).toEqual([2023]);
  });

  test('several filters are sent as one object of the pairs, objects as they are, two or more under $and', () => {
    expect(combineFilters([])).toBeUndefined();
    expect(combineFilters([{ pair: ['team', 'billing'] }, { pair: ['year', 2024] }])).toEqual({ team: 'billing', year: 2024 });
    expect(combineFilters([{ object: { year: { $gte: 2020 } } }])).toEqual({ year: { $gte: 2020 } });
    expect(combineFilters([{ object: { year: { $gte: 2020 } } }, { pair: ['team', 'billing'] }, { pair: ['team', 'legal'] }])).toEqual({
      $and: [{ team: 'billing' }, { year: { $gte: 2020 } }, { team: 'legal' }],
    });
  });

  test('bad JSON is a usage error (exit 2) saying what was expected; a filter the server refuses names its path (exit 1)', () => {
    const bad = cli(['search', 'refund', '--kb', kb, '--filter', '{"year":{"$gte":2021}']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("option '--filter <filter>' argument");
    expect(bad.stderr).toContain('the JSON does not parse (');
    expect(bad.stderr).toContain('expected key=value or a JSON object');
    const notObject = cli(['search', 'refund', '--kb', kb, '--filter', 'year']);
    expect(notObject.code).toBe(2);
    expect(notObject.stderr).toContain('expected key=value or a JSON object');
    const refused = cli(['search', 'refund', '--kb', kb, '--filter', '{"year":{"$after":2020}}']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('/metadataFilter/year/$after');
    expect(refused.stderr).toContain('unknown operator $after');
  });

  test('--context n shows the n chunks before and after each hit', () => {
    const run = cli(['search', 'zebra', '--kb', kb, '--mode', 'full-text', '--limit', '1', '--context', '1']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('zebra');
    // Below the table: the end of the chunk before the hit, the hit, the beginning of the chunk after it.
    const block = run.stdout.slice(run.stdout.indexOf('\n#1 in ')).trim().split('\n');
    expect(block).toHaveLength(4);
    expect(block[0]).toMatch(/^#1 in ct_\w+:$/);
    expect(block[1]).toMatch(/^ {2}before {2}….*Handbook line \d+ says nothing in particular\.$/);
    expect(block[2]).toMatch(/^ {2}hit {5}\S/);
    expect(block[3]).toMatch(/^ {2}after {3}\S.*…$/);
    const lines = (text: string) => [...text.matchAll(/line (\d+)/g)].map((m) => Number(m[1]));
    expect(lines(block[1]!).at(-1)!).toBeLessThan(lines(block[3]!)[0]!);
    expect(cli(['search', 'zebra', '--kb', kb, '--context', '11']).code).toBe(2);
    expect(cli(['search', 'zebra', '--kb', kb, '--context', '11']).stderr).toContain('must be an integer from 0 to 10');
  });
});

describe('in a terminal', () => {
  test("ingest draws its bars in place: uploads, then this run's items being indexed (not the whole knowledge base)", () => {
    const kb = cli(['kb', 'create', 'Terminal']).stdout.trim();
    // An item already there: the index bar must count only this run's two.
    expect(cli(['ingest', 'docs/refunds.md', '--kb', kb]).code).toBe(0);
    const dir = join(work, 'tty');
    mkdirSync(dir);
    writeFileSync(join(dir, 'one.md'), '# One\n\nThe first file of the terminal run.');
    writeFileSync(join(dir, 'two.txt'), 'The second file of the terminal run.');
    // util-linux script: the CLI's stdout and stderr are a pseudo-terminal.
    const command = ['bun', join(ROOT, 'src', 'cli', 'main.ts'), 'ingest', 'tty', '--kb', kb].join(' ');
    const run = Bun.spawnSync(['script', '-qfec', command, '/dev/null'], {
      cwd: work,
      env: { ...process.env, KB_URL: server.url, KB_ORG: ORG, KB_KEY: KEY, COLUMNS: '120' },
      timeout: 60_000,
    });
    const out = run.stdout.toString();
    expect(run.exitCode).toBe(0);
    // Redrawn in place (cursor movement), not one line per update as on a pipe.
    expect(out).toContain('\u001b[');
    expect(out).toMatch(/upload \|[█░]+\| 2\/2 files/);
    expect(out).toMatch(/index  \|[█░]+\| 2\/2 items/);
    expect(out).not.toMatch(/index  \|[█░]+\| \d+\/3 items/);
    expect(out).toContain('2 files: 2 uploaded, 0 skipped (already in the knowledge base), 0 not readable by the server, 0 failed to upload');
  }, 60_000);
});

describe('failures', () => {
  test('files the server cannot read are left out before uploading and summed up by reason; a refused one fails the run (exit 1)', () => {
    const kb = cli(['kb', 'create', 'Mixed']).stdout.trim();
    const dir = join(work, 'mixed');
    mkdirSync(dir);
    writeFileSync(join(dir, 'good.txt'), 'A perfectly good text.');
    writeFileSync(join(dir, 'notes.md.gz'), gzipSync('# Notes\n\nCompressed Markdown is read by the server.'));
    for (const name of ['a', 'b', 'c', 'd']) writeFileSync(join(dir, `${name}.bin`), new Uint8Array([0, 1, 2, 3, 255, 254, 0, name.charCodeAt(0)]));
    writeFileSync(join(dir, 'scan.png'), new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]));
    writeFileSync(
      join(dir, 'broken.pdf'),
      new Uint8Array(512).map((_, i) => (i * 7919) % 256),
    );
    const run = cli(['ingest', 'mixed', '--kb', kb]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('8 files: 2 uploaded, 0 skipped (already in the knowledge base), 5 not readable by the server, 1 failed to upload');
    expect(run.stdout).toContain(
      'not uploaded (the server would refuse them):\n' +
        '  4 files: binary data of a type the server does not read (.bin)\n    mixed/a.bin, mixed/b.bin, mixed/c.bin, … (1 more)\n' +
        '  1 file: an image: only TEXT_AND_MEDIA_HIGH_QUALITY knowledge bases read images (OCR)\n    mixed/scan.png\n',
    );
    expect(run.stdout).toMatch(/failures:\n {2}1 file: .*\(UNSUPPORTED_FILE_TYPE\)\n {4}mixed\/broken\.pdf/);
    expect(run.stdout).toContain('indexed: 2 ready, 0 failed');
    // Search tables name the file path, not the item id.
    const hits = cli(['search', 'compressed markdown', '--kb', kb, '--mode', 'full-text']);
    expect(hits.stdout).toMatch(/^1\s+\S+\s+mixed\/notes\.md\.gz\s+/m);
  }, 60_000);

  test('server errors, usage errors and an unreachable server: one readable line each', async () => {
    const missing = cli(['search', 'x', '--kb', 'kb_00000000000000000000000000aa']);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe('error: Knowledge base not found (NOT_FOUND)');
    const usage = cli(['search', 'x', '--kb', 'kb_x', '--weight', '2']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("argument '2' is invalid. must be a number between 0 and 1");
    expect(cli(['ingest', 'no-such-folder', '--kb', 'kb_x']).stderr.trim()).toBe('error: no such file or folder: no-such-folder');
    expect(cli(['kb', 'list'], { KB_KEY: 'wrong-key-0000000000' }).stderr).toContain('(UNAUTHORIZED)');
    const down = cli(['kb', 'list'], { KB_URL: `http://127.0.0.1:${await freePort()}` });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^error: cannot reach the server at http:\/\/127\.0\.0\.1:\d+ .*is it running\?/);
    const noKey = cli(['kb', 'list'], { KB_ORG: '', KB_KEY: '' });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('--org and --key');
  });

  test('--help on every command; an unknown command is a usage error', () => {
    for (const args of [[], ['kb'], ['kb', 'create'], ['kb', 'list'], ['kb', 'delete'], ['ingest'], ['search'], ['export']]) {
      const help = cli([...args, '--help']);
      expect({ args, code: help.code }).toEqual({ args, code: 0 });
      expect(help.stdout).toContain('Usage: kb-search');
    }
    const unknown = cli(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
  });
});
