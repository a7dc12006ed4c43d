// The /docs page (Swagger UI, served offline) in a real headless Chromium: one step authorizes both
// headers every /api/v1 route needs — the sign-in bar above the page, and in the Authorize dialog
// either scheme's button when both fields are filled — so "Try it out" answers 200, not 401.
// Screenshots are kept under the test output folder for a person to look at.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createKb, KEY, ORG, InProcessServer } from './helpers/server';

declare const document: any;

const CHROMIUM = '/usr/bin/chromium';
let server: InProcessServer;
let browser: Browser;
const shots = join(tmpdir(), 'kb-search-test-output');

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run "bun scripts/test-deps.ts" (apt-get install chromium)`);
  server = await InProcessServer.start();
  await createKb(server, 'Docs page test');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  mkdirSync(shots, { recursive: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  server?.cleanup();
});

async function openDocs(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1300, height: 1000 } });
  page.on('pageerror', (err) => console.error('[docs page error]', err.message));
  await page.goto(`${server.url}/docs`);
  await page.waitForSelector('.opblock-tag-section');
  return page;
}

/** "Try it out" on GET /api/v1/knowledge-bases; the status the page shows. */
async function tryListing(page: Page): Promise<string> {
  const op = page.locator('#operations-Knowledge_bases-getApiV1Knowledge-bases');
  await op.locator('.opblock-summary').click();
  await op.locator('button.try-out__btn').click();
  await op.locator('button.execute').click();
  const status = op.locator('.live-responses-table .response .response-col_status').first();
  await status.waitFor();
  return (await status.textContent())!.trim();
}

test('the sign-in bar authorizes both headers in one step: "Try it out" answers 200', async () => {
  const page = await openDocs();
  await page.fill('#sign-in-org', ORG);
  await page.fill('#sign-in-key', KEY);
  await page.click('#sign-in button[type="submit"]');
  await page.waitForFunction(() => document.querySelector('#sign-in-status')?.textContent?.startsWith('Authorized as'));
  expect(await tryListing(page)).toBe('200');
  await page.screenshot({ path: join(shots, 'docs-sign-in.png'), fullPage: false });
  await page.close();
}, 60_000);

test('in the Authorize dialog, both fields filled and one button pressed: both headers are sent', async () => {
  const page = await openDocs();
  await page.click('.auth-wrapper .authorize');
  const containers = page.locator('.modal-ux .auth-container');
  expect(await containers.count()).toBe(2);
  await containers.filter({ hasText: 'x-service-api-key' }).locator('input').fill(KEY);
  await containers.filter({ hasText: 'x-service-organization-id' }).locator('input').fill(ORG);
  await page.screenshot({ path: join(shots, 'docs-authorize-dialog.png') });
  // Only the first scheme's button.
  await containers.first().locator('button.authorize').click();
  expect(await containers.locator('button.authorize').count()).toBe(0); // both now show Logout
  await page.click('.modal-ux .close-modal');
  expect(await tryListing(page)).toBe('200');
  await page.close();
}, 60_000);

test('without authorizing, the same try answers 401 (the test can fail)', async () => {
  const page = await openDocs();
  expect(await tryListing(page)).toBe('401');
  await page.close();
}, 60_000);
