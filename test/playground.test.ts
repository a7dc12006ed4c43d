// The playground (/playground) in a real headless Chromium (Debian's chromium, driven by
// playwright-core): connect with an organization key, create a knowledge base, upload two files
// with metadata (progress bar), wait for indexing, search, and check the three columns side by
// side, the hybrid leg badges, the weight slider, metadata filters (key = value rows, JSON operator
// objects, a whole JSON filter, bad JSON), the typo checkbox, and min score, max chunks per item
// and context (neighbouring chunks shown under a hit). A screenshot is saved under the test output
// folder (its path is printed).
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { addContent, KEY, ORG, InProcessServer } from './helpers/server';

// Page functions run in the browser; the test's own types have no DOM.
declare const document: any;

const CHROMIUM = '/usr/bin/chromium';
let server: InProcessServer;
let browser: Browser;
let page: Page;
const files = mkdtempSync(join(tmpdir(), 'kb-playground-'));

beforeAll(async () => {
  // The README's test command installs it (scripts/test-deps.ts); without it this must fail, not skip.
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run "bun scripts/test-deps.ts" (apt-get install chromium)`);
  server = await InProcessServer.start();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.on('pageerror', (err) => console.error('[playground page error]', err.message));
  writeFileSync(join(files, 'refunds.md'), '# Refunds\n\nRefunds are issued within 14 days of a return. Billing answers refund questions.');
  writeFileSync(join(files, 'passwords.md'), '# Passwords\n\nReset your password from the account settings page. Support answers within a day.');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  rmSync(files, { recursive: true, force: true });
});

const column = (mode: string) => page.locator(`.column[data-mode="${mode}"]`);
const hitTexts = (mode: string) => column(mode).locator('.hit .text').allTextContents();
/** Waits until the element's text contains `text` (bun:test has no Playwright matchers). */
const waitForText = (selector: string, text: string) =>
  page.waitForFunction(([sel, t]) => document.querySelector(sel!)?.textContent?.includes(t!) ?? false, [selector, text] as const);

test('nothing looks filled in before the user types: Connect with empty fields says what is missing; the tab has an icon', async () => {
  await page.goto(`${server.url}/playground`);
  expect(await page.locator('#org').getAttribute('placeholder')).toBeNull();
  expect(await page.locator('#key').getAttribute('placeholder')).toBeNull();
  await page.click('#connect');
  await waitForText('#connection-status', 'Enter both the organization id and its API key.');
  const icon = await fetch(`${server.url}/favicon.ico`);
  expect(icon.status).toBe(200);
  expect(icon.headers.get('content-type')).toBe('image/svg+xml');
  // The same default type as the CLI's kb create.
  expect(await page.locator('#new-kb-type').inputValue()).toBe('TEXT_HIGH_QUALITY');
});

test('connect, create a knowledge base, upload with progress, search three ways side by side', async () => {
  await page.goto(`${server.url}/playground`);
  await page.fill('#org', ORG);
  await page.fill('#key', KEY);
  await page.click('#connect');
  await waitForText('#connection-status', `Connected as ${ORG}`);

  await page.fill('#new-kb-name', 'Playground test');
  await page.selectOption('#new-kb-type', 'TEXT_COST_EFFECTIVE');
  await page.click('#create-kb');
  await page.waitForFunction(() => document.getElementById('kb').selectedOptions[0]?.textContent?.startsWith('Playground test'));
  // The model serving the selected knowledge base (its configuration): the shipped one by default.
  await waitForText('#kb-model', 'TEXT_COST_EFFECTIVE: model Xenova/all-MiniLM-L6-v2 (int8, 384 dimensions, i8 vectors)');

  for (const [name, team] of [
    ['refunds.md', 'billing'],
    ['passwords.md', 'support'],
  ] as const) {
    await page.setInputFiles('#files', join(files, name));
    await page.fill('#upload-metadata', JSON.stringify({ team }));
    await page.click('#upload');
    await page.waitForFunction((n) => [...document.querySelectorAll('#upload-log li')].some((li) => li.textContent?.startsWith(`${n}: accepted`)), name);
  }
  expect(await page.locator('#upload-progress').evaluate((el: any) => el.value)).toBe(1);
  // Indexing progress: polled until nothing waits.
  await page.waitForFunction(() => document.getElementById('ingestion')?.textContent?.startsWith('2 ready, 0 indexing, 0 failed'), undefined, {
    timeout: 60_000,
  });

  await page.fill('#query', 'refund');
  await page.click('#search-form button[type="submit"]');
  await page.waitForFunction(() => document.body.dataset.searched === '1');
  const fullText = await hitTexts('full-text');
  expect(fullText).toHaveLength(1); // only the refunds file has the word
  expect(fullText[0]).toContain('Refunds are issued');
  expect((await hitTexts('semantic')).length).toBe(2);
  const hybrid = await hitTexts('hybrid');
  expect(hybrid[0]).toContain('Refunds are issued');
  // Snippets with the matched words marked, titled by the file the item came from.
  expect(await column('full-text').locator('.hit .text mark').first().textContent()).toMatch(/^refunds?$/i);
  await waitForText('.column[data-mode="full-text"] .hit .title', 'refunds.md');
  for (const mode of ['full-text', 'semantic', 'hybrid']) {
    // Each hit shows its score, best first.
    const scores = (await column(mode).locator('.hit .score').allTextContents()).map(Number);
    expect(scores.every(Number.isFinite)).toBe(true);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(scores[0]).toBeGreaterThan(0);
    expect(await column(mode).locator('.meta').textContent()).toMatch(/^\d+ hits in \d+ ms/);
  }
  // Which leg brought each hybrid hit: the refunds chunk came from both, the passwords chunk from semantic only.
  const badges = column('hybrid').locator('.hit').first().locator('.leg');
  expect(await badges.allTextContents()).toEqual([expect.stringMatching(/^full-text #1 \d/), expect.stringMatching(/^semantic #\d \d/)]);
  expect(await column('hybrid').locator('.hit').nth(1).locator('.leg').allTextContents()).toEqual([expect.stringMatching(/^semantic #\d/)]);

  const screenshots = join(tmpdir(), 'kb-search-test-output');
  mkdirSync(screenshots, { recursive: true });
  const shot = join(screenshots, 'playground.png');
  await page.screenshot({ path: shot, fullPage: true });
  console.log(`[playground] screenshot: ${shot}`);
  expect(existsSync(shot)).toBe(true);
}, 120_000);

test('the weight slider re-runs hybrid search with its weight', async () => {
  const request = page.waitForRequest((r) => r.url().endsWith('/search/hybrid') && JSON.parse(r.postData() ?? '{}').semanticWeight === 1);
  await page.locator('#weight').fill('1');
  await request;
  await waitForText('.column[data-mode="hybrid"] .meta', 'semantic weight 1.00');
  // At weight 1 hybrid is the semantic ranking.
  await page.waitForFunction(() => document.querySelectorAll('.column[data-mode="hybrid"] .hit').length === 2);
  expect(await hitTexts('hybrid')).toEqual(await hitTexts('semantic'));
}, 60_000);

test('a metadata filter narrows every column', async () => {
  await page.click('#add-filter');
  await page.fill('.filter-row .filter-key', 'team');
  await page.fill('.filter-row .filter-value', 'support');
  const searched = Number(await page.evaluate(() => document.body.dataset.searched));
  await page.click('#search-form button[type="submit"]');
  await page.waitForFunction((n) => document.body.dataset.searched === String(n + 1), searched);
  expect(await hitTexts('full-text')).toEqual([]); // "refund" is not in the support file
  for (const mode of ['semantic', 'hybrid']) {
    const metadata = await column(mode).locator('.hit .metadata').allTextContents();
    expect(metadata).toHaveLength(1);
    expect(metadata[0]).toContain('team: support');
  }
}, 60_000);

/** Submits the search form and waits until its results are drawn; resolves with each mode's request body. */
async function searchAndWait(): Promise<Record<string, any>> {
  const searched = Number(await page.evaluate(() => document.body.dataset.searched));
  const bodies: Record<string, any> = {};
  const seen = (r: { url(): string; postData(): string | null }) => {
    const mode = /\/search\/([a-z-]+)$/.exec(r.url())?.[1];
    if (mode) bodies[mode] = JSON.parse(r.postData() ?? '{}');
  };
  page.on('request', seen);
  try {
    await page.click('#search-form button[type="submit"]');
    await page.waitForFunction((n) => document.body.dataset.searched === String(n + 1), searched);
  } finally {
    page.off('request', seen);
  }
  return bodies;
}

test('the filter takes JSON: an operator object as a row value, a whole filter ($or) in the JSON field; bad JSON is shown and nothing is searched', async () => {
  // The row left by the last test (team = support) now holds an operator object.
  await page.fill('.filter-row .filter-value', '{"$in":["billing"]}');
  let bodies = await searchAndWait();
  for (const mode of ['full-text', 'semantic', 'hybrid']) expect(bodies[mode].metadataFilter).toEqual({ team: { $in: ['billing'] } });
  expect(await hitTexts('full-text')).toEqual([expect.stringContaining('Refunds are issued')]);
  expect(await column('semantic').locator('.hit .metadata').allTextContents()).toEqual([expect.stringContaining('team: billing')]);

  // The row and a whole filter: both must hold, sent under $and.
  await page.fill('.filter-row .filter-value', 'support');
  await page.fill('#filter-json', '{"$or":[{"team":"billing"},{"team":{"$exists":false}}]}');
  bodies = await searchAndWait();
  expect(bodies.semantic.metadataFilter).toEqual({ $and: [{ team: 'support' }, { $or: [{ team: 'billing' }, { team: { $exists: false } }] }] });
  expect(await hitTexts('semantic')).toEqual([]);
  await page.locator('.filter-row button').click(); // the row removed: the JSON filter alone
  bodies = await searchAndWait();
  expect(bodies.hybrid.metadataFilter).toEqual({ $or: [{ team: 'billing' }, { team: { $exists: false } }] });
  expect(await column('semantic').locator('.hit .metadata').allTextContents()).toEqual([expect.stringContaining('team: billing')]);

  // JSON that does not parse: said beside the field, no request made.
  const searched = await page.evaluate(() => document.body.dataset.searched);
  await page.fill('#filter-json', '{"team":');
  await page.click('#search-form button[type="submit"]');
  await waitForText('#filter-status', 'the JSON filter: not valid JSON');
  expect(await page.locator('#filter-status').getAttribute('class')).toContain('error');
  expect(await page.evaluate(() => document.body.dataset.searched)).toBe(searched);
  // A filter the server refuses: each column says where and why.
  await page.fill('#filter-json', '{"team":{"$after":1}}');
  await searchAndWait();
  expect(await page.locator('#filter-status').textContent()).toBe('');
  for (const mode of ['full-text', 'semantic', 'hybrid']) {
    expect(await column(mode).locator('.meta').textContent()).toContain('VALIDATION_ERROR');
    expect(await column(mode).locator('.meta').textContent()).toContain('/metadataFilter/team/$after');
  }
  await page.fill('#filter-json', '');
}, 60_000);

test('the typo checkbox: a misspelled word finds the word, unchecked it does not', async () => {
  await page.fill('#query', 'refnud');
  let bodies = await searchAndWait();
  expect(bodies['full-text'].typoTolerance).toBeUndefined(); // on: the default
  expect(await hitTexts('full-text')).toEqual([expect.stringContaining('Refunds are issued')]);
  expect(await column('full-text').locator('.hit .text mark').first().textContent()).toMatch(/^refunds?$/i);
  await page.uncheck('#typos');
  bodies = await searchAndWait();
  for (const mode of ['full-text', 'semantic', 'hybrid']) expect(bodies[mode].typoTolerance).toBe(false);
  expect(await hitTexts('full-text')).toEqual([]);
  await page.check('#typos');
}, 60_000);

test('min score, max chunks per item and context go into every search; neighbouring chunks are shown with each hit', async () => {
  // A long item: many chunks, each with "handbook"; "zebra" only in the middle one.
  const kb = await page.locator('#kb').inputValue();
  const long = Array.from({ length: 150 }, (_, i) =>
    i === 75 ? 'A zebra crossed the handbook at line 75.' : `Handbook line ${i} says nothing in particular.`,
  ).join(' ');
  await addContent(server, kb, long, { team: 'docs' });

  await page.fill('#query', 'handbook');
  let bodies = await searchAndWait();
  expect((await hitTexts('full-text')).length).toBeGreaterThan(2); // several chunks of the one item
  await page.fill('#per-content', '1');
  await page.fill('#context-before', '1');
  await page.fill('#context-after', '1');
  bodies = await searchAndWait();
  for (const mode of ['full-text', 'semantic', 'hybrid']) {
    expect(bodies[mode]).toMatchObject({ maxChunksPerContent: 1, context: { before: 1, after: 1 } });
    expect(bodies[mode].minScore).toBeUndefined();
  }
  expect(await hitTexts('full-text')).toHaveLength(1);

  await page.fill('#query', 'zebra');
  await searchAndWait();
  const hit = column('full-text').locator('.hit').first();
  expect(await hit.locator('.text').textContent()).toContain('zebra');
  expect(await hit.locator('.context summary').textContent()).toBe('context: 1 before, 1 after');
  const [before, after] = [await hit.locator('.context .before').textContent(), await hit.locator('.context .after').textContent()];
  const lines = (text: string | null) => [...(text ?? '').matchAll(/line (\d+)/g)].map((m) => Number(m[1]));
  expect(lines(before).at(-1)!).toBeLessThan(75);
  expect(lines(after)[0]!).toBeGreaterThan(75);

  // A min score above any score: every column empty, each by its own scale.
  await page.fill('#min-score', '1000');
  bodies = await searchAndWait();
  for (const mode of ['full-text', 'semantic', 'hybrid']) {
    expect(bodies[mode].minScore).toBe(1000);
    expect(await column(mode).locator('.hit').count()).toBe(0);
  }
  for (const id of ['#min-score', '#per-content']) await page.fill(id, '');
  for (const id of ['#context-before', '#context-after']) await page.fill(id, '0');
}, 120_000);
