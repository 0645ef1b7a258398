import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { bearer, createMerchant, TestStack } from '../support/stack';
import { CARDS, pay, paymentsFixture, PaymentsFixture } from '../support/payments';
import { deliveryFor, enabledEndpoint, eventually, getDelivery, OperatorStack, Receiver, startReceiver, buildDashboard } from './support';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ROOT = join(__dirname, '..', '..');
// SB_SCREENSHOTS=1 refreshes the README's screenshots; otherwise they go to the scratch folder.
const SHOTS = process.env.SB_SCREENSHOTS === '1' ? join(ROOT, 'docs', 'screenshots') : join(ROOT, 'test', '.tmp', 'screenshots');

let stack: TestStack;
let browser: Browser;
let page: Page;
let f: PaymentsFixture;
let receiver: Receiver;
let cascaded: any;
let endpoint: { id: string; url: string };
let dead: any;
const offsite: string[] = [];

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

/** The dashboard in headless Chromium, against the shared operator stack (skipped without Chromium). */
export function dashboardCases(s: OperatorStack) {
  if (!existsSync(CHROMIUM)) console.warn(`dashboard browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium)`);

  describe.skipIf(!existsSync(CHROMIUM))('the dashboard in a real browser', () => {
    beforeAll(async () => {
      mkdirSync(SHOTS, { recursive: true });
      stack = s.stack;
      // The same build `npm run build` makes, served by the API at /dashboard.
      await buildDashboard();
      // The primary provider is down: the payment cascades to the backup, which approves it.
      f = await paymentsFixture(stack, { primary: { outage: true } });
      const res = await pay(stack, f.merchant, CARDS.visa, { amount: 12_500, metadata: { order: 'ord_1042' } });
      expect(res.body.data.status, JSON.stringify(res.body)).toBe('SUCCEEDED');
      cascaded = res.body.data;
      await pay(stack, f.merchant, CARDS.declined, { amount: 3_000 });
      // A receiver that rejects the event: the delivery is dead-lettered at once.
      receiver = await startReceiver();
      endpoint = await enabledEndpoint(stack, f.merchant, receiver.url);
      dead = await deliveryFor(stack, f.merchant, endpoint.id, 'dead_lettered');

      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
      });
      page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
      page.on('request', (req) => { if (!req.url().startsWith(stack.baseUrl) && !req.url().startsWith('data:')) offsite.push(req.url()); });
    });
    afterAll(async () => {
      await browser?.close();
      await receiver?.close();
    });

    it('signs in with a secret key and lists payments, filtered by status', async () => {
      await page.goto(`${stack.baseUrl}/dashboard`);
      await page.getByLabel('API key or JWT').fill('sk_test_not_a_real_key_000000000000000000');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'not accepted' }).waitFor();
      await shot('sign-in');

      await page.getByLabel('API key or JWT').fill(f.merchant.secretKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      const table = page.getByTestId('payments-table');
      await table.waitFor();
      expect(page.url()).toBe(`${stack.baseUrl}/dashboard/payments`);
      await expect.poll(() => table.locator('tbody tr').count()).toBe(3);
      expect(await table.textContent()).toContain('$125.00');
      expect(await table.textContent()).toContain('card_declined');
      await shot('payments');

      await page.getByRole('group', { name: 'Filter by status' }).getByRole('button', { name: 'Failed' }).click();
      await expect.poll(() => table.locator('tbody tr').count()).toBe(1);
      expect(page.url()).toContain('status=FAILED');
      await page.getByRole('group', { name: 'Filter by status' }).getByRole('button', { name: 'Refunded', exact: true }).click();
      await page.getByText('No refunded payments').waitFor();
      // Everything came from this server: no CDN.
      expect(offsite).toEqual([]);
    });

    it('opens a cascaded payment: both charges, the routing plan and the link to its workflow', async () => {
      await page.goto(`${stack.baseUrl}/dashboard/payments`);
      await page.getByTestId('payments-table').getByText('$125.00').click();
      const charges = page.getByTestId('charges-table');
      await charges.waitFor();
      expect(page.url()).toBe(`${stack.baseUrl}/dashboard/payments/${cascaded.id}`);
      const rows = charges.locator('tbody tr');
      expect(await rows.count()).toBe(2);
      expect(await rows.nth(0).textContent()).toMatch(/#1.*Primary.*Failed.*provider_unavailable/);
      expect(await rows.nth(1).textContent()).toMatch(/#2.*Backup.*Captured/);
      const plan = page.getByTestId('routing-plan');
      expect(await plan.locator('li').count()).toBe(2);
      expect(await plan.locator('li.current').textContent()).toContain('Backup');
      expect(await page.getByTestId('timeline').textContent()).toContain('Payment intent succeeded');
      const link = page.getByTestId('temporal-link');
      expect(await link.getAttribute('href')).toBe(cascaded.temporal.ui_url);
      expect(await link.getAttribute('target')).toBe('_blank');
      await shot('payment-detail');
    });

    it('opens a dead-lettered delivery with its response body, and Replay adds an attempt', async () => {
      await page.goto(`${stack.baseUrl}/dashboard/webhooks`);
      await page.getByTestId('endpoints-table').getByText(endpoint.url).waitFor();
      await page.getByRole('group', { name: 'Filter deliveries by status' }).getByRole('button', { name: 'Dead lettered' }).click();
      const row = page.locator(`tr[data-delivery="${dead.id}"]`);
      await row.waitFor();
      expect(await page.getByTestId('deliveries-table').locator('tbody tr').count()).toBe(1);
      await shot('webhooks');

      await row.click();
      const attempts = page.getByTestId('attempts');
      await attempts.waitFor();
      expect(await page.locator('.detail-title').textContent()).toContain('Dead lettered');
      const first = attempts.locator('li[data-attempt="1"]');
      expect(await first.textContent()).toContain('400');
      expect(await first.locator('.response-body').textContent()).toBe(receiver.answer.body);
      await shot('delivery-dead-lettered');

      receiver.answer = { status: 200, body: '{"received":true}' };
      await page.getByTestId('replay').click();
      const second = attempts.locator('li[data-attempt="2"]');
      await second.waitFor({ timeout: 20_000 });
      expect(await second.textContent()).toContain('200');
      expect(await second.textContent()).toContain('Replay');
      expect(await second.locator('.response-body').textContent()).toBe('{"received":true}');
      await page.locator('.detail-title').getByText('Succeeded').waitFor();
      expect(await page.getByTestId('attempt-count').textContent()).toBe('2');
      expect((await getDelivery(stack, f.merchant, dead.id)).status).toBe('succeeded');
      await shot('delivery-replayed');
    });

    it('recovers an endpoint\'s failed deliveries since a time', async () => {
      // A 400 dead-letters the delivery and keeps the endpoint enabled (a 410 would disable it).
      receiver.answer = { status: 400, body: '{"error":"bad_request"}' };
      const another = await deliveryFor(stack, f.merchant, endpoint.id, 'dead_lettered');
      receiver.answer = { status: 200, body: 'ok' };
      await page.goto(`${stack.baseUrl}/dashboard/webhooks/endpoints/${endpoint.id}`);
      await page.getByRole('button', { name: 'Recover since…' }).click();
      const form = page.getByTestId('recover-form');
      await form.getByRole('button', { name: 'Recover' }).click();
      await page.getByRole('status').filter({ hasText: 'delivery re-sent' }).waitFor();
      expect(await page.getByRole('status').filter({ hasText: 're-sent' }).textContent()).toBe('1 delivery re-sent.');
      await eventually(async () => ((await getDelivery(stack, f.merchant, another.id)).status === 'succeeded' ? true : undefined));
      await shot('endpoint-recover');
    });

    it('signs in with a JWT that has several accounts through an account picker', async () => {
      const sandbox = await createMerchant(stack, { sandboxOf: f.merchant });
      const accounts = await stack.http.get('/v1/accounts').set(bearer(f.merchant.token));
      expect(accounts.body.data).toHaveLength(2);
      const fresh = await browser.newPage({ viewport: { width: 1280, height: 860 } });
      try {
        await fresh.goto(`${stack.baseUrl}/dashboard/webhooks`);
        await fresh.getByLabel('API key or JWT').fill(f.merchant.token);
        await fresh.getByRole('button', { name: 'Sign in' }).click();
        await fresh.getByText('Choose an account').waitFor();
        await fresh.screenshot({ path: join(SHOTS, 'account-picker.png') });
        await fresh.getByRole('button', { name: new RegExp(sandbox.account.id) }).click();
        await fresh.getByText('No webhook endpoints').waitFor();
        expect(await fresh.locator('.account').textContent()).toContain('Sandbox');
        // A reload keeps the session (sessionStorage) and the client-side route (served by the fallback).
        await fresh.reload();
        await fresh.getByText('No webhook endpoints').waitFor();
        await fresh.getByRole('button', { name: 'Sign out' }).click();
        await fresh.getByLabel('API key or JWT').waitFor();
      } finally {
        await fresh.close();
      }
    });
  });
}
