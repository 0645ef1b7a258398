import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { bearer, createMerchant, Merchant, startStack, TestStack } from '../support/stack';
import { buildDashboard } from './support';
import { HAS_CHROMIUM, launchChromium } from '../support/chromium';

// SB_SCREENSHOTS=1 refreshes the docs' screenshot; otherwise it goes to the scratch folder.
const SHOTS = process.env.SB_SCREENSHOTS === '1' ? join(__dirname, '..', '..', 'docs', 'screenshots') : join(__dirname, '..', '.tmp', 'screenshots');

let stack: TestStack;
let browser: Browser;
let page: Page;
let m: Merchant;

/** The audit log page in headless Chromium (skipped without Chromium), against a real API and Postgres. */
describe.skipIf(!HAS_CHROMIUM)('the audit log page', () => {
  beforeAll(async () => {
    stack = await startStack();
    m = await createMerchant(stack);
    for (const name of ['reporting', 'exports']) {
      expect((await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name })).status).toBe(201);
    }
    const endpoint = await stack.http.post('/v1/webhook-endpoints').set(bearer(m.secretKey)).send({ url: 'http://127.0.0.1:9/hooks' });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    expect((await stack.http.post(`/v1/webhook-endpoints/${endpoint.body.data.id}/rotate-secret`).set(bearer(m.secretKey)).send({})).status).toBe(200);
    await buildDashboard();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('lists the account\'s audit events, filters them by action, and shows a rotated secret only as changed', async () => {
    await page.goto(`${stack.baseUrl}/dashboard`);
    await page.getByLabel('API key or JWT').fill(m.secretKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('payments-table').or(page.getByText('No payments yet')).waitFor();

    await page.getByRole('link', { name: 'Audit log' }).click();
    const table = page.getByTestId('audit-table');
    await table.waitFor();
    expect(page.url()).toBe(`${stack.baseUrl}/dashboard/audit`);
    // Newest first: the rotation, the endpoint, two keys, the account itself.
    await expect.poll(() => table.locator('tbody tr').count()).toBe(5);
    const rows = await table.locator('tbody tr td:first-child').allTextContents();
    expect(rows).toEqual(['webhook_endpoint.secret_rotated', 'webhook_endpoint.created', 'api_key.created', 'api_key.created', 'account.created']);
    expect(await table.locator('tbody tr').first().textContent()).toContain('secret: [changed]');
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, 'audit.png'), fullPage: true });

    await page.getByLabel('Action').fill('api_key.created');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
    expect(page.url()).toContain('action=api_key.created');
    expect(await table.textContent()).toContain('reporting');

    await page.getByLabel('Action').fill('membership.deleted');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('No audit events match').waitFor();
  });
});
