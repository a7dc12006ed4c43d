// The playground (/playground) in a real headless Chromium (Debian's chromium, driven by
// playwright-core): connect with an organization key, create a knowledge base, upload two files
// with metadata (progress bar), wait for indexing, search, and check the three columns side by
// side, the hybrid leg badges, the weight slider and a metadata filter. A screenshot is saved
// under the test output folder (its path is printed).
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { KEY, ORG, InProcessServer } from './helpers/server';

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
