import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page, Route } from 'playwright-core';
import type { AnalyticsPoint, ProviderAnalytics } from '../../lib/routing/adaptive-contract';
import { bearer, createMerchant, TestStack } from '../support/stack';
import { CARDS, pay, paymentsFixture, PaymentsFixture } from '../support/payments';
import { HAS_CHROMIUM, launchChromium } from '../support/chromium';
import { deliveryFor, enabledEndpoint, eventually, getDelivery, OperatorStack, Receiver, startReceiver, buildDashboard } from './support';

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
  describe.skipIf(!HAS_CHROMIUM)('the dashboard in a real browser', () => {
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

      // Beyond the shared arguments, this suite keeps Chromium from reaching out on its own (background networking, component updates, sync).
      browser = await launchChromium(['--disable-background-networking', '--disable-component-update', '--disable-sync']);
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

    it('shows the real provider health the payments above recorded (the API, not a fixture)', async () => {
      // The primary config was down for the cascaded payment: transport errors there, approvals at the backup.
      await page.goto(`${stack.baseUrl}/dashboard/providers`);
      const primary = page.locator(`[data-provider="${f.primary.id}"]`);
      const backup = page.locator(`[data-provider="${f.backup.id}"]`);
      await primary.waitFor();
      await backup.waitFor();
      expect(Number((await primary.locator('[data-fact="Transport errors"] dd').textContent())!.replace(/,/g, ''))).toBeGreaterThanOrEqual(1);
      expect(await primary.locator('[data-circuit]').textContent()).toBe('Circuit closed');
      expect(Number((await backup.locator('[data-fact="Attempts"] dd').textContent())!.replace(/,/g, ''))).toBeGreaterThanOrEqual(1);
      const direct = await stack.http.get(`/v1/analytics/providers?account_id=${f.merchant.account.id}&interval=minute&from=${new Date(Date.now() - 3_600_000).toISOString()}`).set(bearer(f.merchant.token));
      expect(direct.status, JSON.stringify(direct.body)).toBe(200);
      const backupTotals = direct.body.data.providers.find((p: { provider_config_id: string }) => p.provider_config_id === f.backup.id).totals;
      expect(await backup.locator('[data-fact="Attempts"] dd').textContent()).toBe(backupTotals.attempts.toLocaleString('en-US'));
      await page.locator('.uplot canvas').first().waitFor();
      expect(await page.locator('.uplot canvas').count()).toBe(2);
    });

    it('shows provider health and charts, and refetches with the interval that fits the range', async () => {
      // The analytics endpoint is answered here from a fixture: the page is pinned against its contract.
      const asked: URL[] = [];
      const isAnalytics = (url: URL) => url.origin === stack.baseUrl && url.pathname === '/v1/analytics/providers';
      const answer = async (route: Route) => {
        const url = new URL(route.request().url());
        asked.push(url);
        const data = providerAnalyticsFixture(url.searchParams.get('from')!, url.searchParams.get('to')!, url.searchParams.get('interval') as ProviderAnalytics['interval']);
        await route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ message: 'Provider analytics', success: true, data }) });
      };
      // uPlot styles its elements from script: the dashboard's strict CSP must not refuse any of it.
      const errors: string[] = [];
      const onConsole = (msg: { type(): string; text(): string }) => { if (msg.type() === 'error') errors.push(msg.text()); };
      page.on('console', onConsole);
      await page.route(isAnalytics, answer);
      try {
        await page.goto(`${stack.baseUrl}/dashboard/payments`);
        await page.getByRole('navigation').getByRole('link', { name: 'Providers' }).click();
        const approval = page.getByRole('figure', { name: 'Approval rate' });
        const latency = page.getByRole('figure', { name: 'Latency' });
        await approval.locator('canvas').waitFor();
        await latency.locator('canvas').waitFor();
        expect(page.url()).toBe(`${stack.baseUrl}/dashboard/providers`);
        expect(await page.locator('.uplot canvas').count()).toBe(2);
        // A legend per chart (the hovered time, then a line per provider; mean and p95 per provider for latency).
        expect(await approval.locator('.u-legend .u-label').allTextContents()).toEqual(['Time', 'Stripe · cards', 'Adyen · cards']);
        expect(await latency.locator('.u-legend .u-label').allTextContents()).toEqual(['Time', 'Stripe · cards mean', 'Stripe · cards p95', 'Adyen · cards mean', 'Adyen · cards p95']);
        // The numbers behind each line are on the page as text too.
        expect(await approval.locator('.chart-data tbody tr').count()).toBe(60);

        expect(asked).toHaveLength(1);
        const first = asked[0].searchParams;
        expect(first.get('account_id')).toBe(f.merchant.account.id);
        expect(first.get('interval')).toBe('minute');
        expect(Date.parse(first.get('to')!) - Date.parse(first.get('from')!)).toBe(60 * 60_000);

        const stripe = page.locator('[data-provider="ppc_stripe_cards"]');
        expect(await stripe.locator('[data-circuit]').textContent()).toBe('Circuit closed');
        expect(await stripe.getByTestId('approval-rate').textContent()).toBe('95.0%');
        expect(await stripe.locator('[data-fact="Attempts"] dd').textContent()).toBe('2,520');
        expect(await stripe.locator('[data-fact="p95"] dd').textContent()).toBe('430 ms');
        const adyen = page.locator('[data-provider="ppc_adyen_cards"]');
        expect(await adyen.locator('[data-circuit]').textContent()).toBe('Circuit open');
        expect(await adyen.locator('[data-circuit]').getAttribute('class')).toContain('badge-red');
        expect(await adyen.getByTestId('approval-rate').textContent()).toBe('84.1%');
        expect(await adyen.locator('[data-fact="Attempts"] dd').textContent()).toBe('1,040');
        expect(await adyen.locator('[data-fact="Hard declines"] dd').textContent()).toBe('52');
        expect(await adyen.locator('[data-fact="Soft declines"] dd').textContent()).toBe('59');
        expect(await adyen.locator('[data-fact="Transport errors"] dd').textContent()).toBe('77');
        expect(await adyen.locator('[data-fact="Unknown outcomes"] dd').textContent()).toBe('21');
        expect(await adyen.locator('[data-fact="p95"] dd').textContent()).toBe('4.80 s');
        await shot('providers');

        const range = page.getByRole('group', { name: 'Range' });
        await range.getByRole('button', { name: 'Last 24 hours' }).click();
        await expect.poll(() => asked.length).toBe(2);
        expect(asked[1].searchParams.get('interval')).toBe('hour');
        expect(Date.parse(asked[1].searchParams.get('to')!) - Date.parse(asked[1].searchParams.get('from')!)).toBe(24 * 3_600_000);
        expect(page.url()).toBe(`${stack.baseUrl}/dashboard/providers?range=24h`);
        await expect.poll(() => approval.locator('.chart-data tbody tr').count()).toBe(24);
        expect(await range.getByRole('button', { name: 'Last 24 hours' }).getAttribute('aria-pressed')).toBe('true');
        await range.getByRole('button', { name: 'Last 7 days' }).click();
        await expect.poll(() => asked.length).toBe(3);
        expect(asked[2].searchParams.get('interval')).toBe('day');
        expect(Date.parse(asked[2].searchParams.get('to')!) - Date.parse(asked[2].searchParams.get('from')!)).toBe(7 * 86_400_000);
        // The charts are drawn again for the new answer, still two.
        await expect.poll(() => approval.locator('.chart-data tbody tr').count()).toBe(7);
        expect(await page.locator('.detail-sub').first().textContent()).toContain('one point per day (UTC)');
        expect(await page.locator('.uplot canvas').count()).toBe(2);
        expect(offsite).toEqual([]);
        expect(errors).toEqual([]);
      } finally {
        page.off('console', onConsole);
        await page.unroute(isAnalytics, answer);
      }
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

const BUCKET_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

/**
 * What `GET /v1/analytics/providers` answers, one point per bucket of [from, to) (60 over the last hour):
 * Stripe healthy; Adyen healthy for the first three quarters (45 minutes), then timeouts and transport
 * errors (7 minutes), then no attempts since its circuit opened. The totals are the sums of the series.
 */
function providerAnalyticsFixture(from: string, to: string, interval: ProviderAnalytics['interval']): ProviderAnalytics {
  const step = BUCKET_MS[interval];
  const buckets = Math.round((Date.parse(to) - Date.parse(from)) / step);
  const healthyUntil = Math.round((buckets * 3) / 4);
  const failingUntil = Math.round((buckets * 13) / 15);
  const point = (counts: Omit<AnalyticsPoint, 'approval_rate' | 'latency_ms'>, latency: AnalyticsPoint['latency_ms']): AnalyticsPoint => ({
    ...counts,
    approval_rate: counts.attempts - counts.hard_declines > 0 ? counts.approvals / (counts.attempts - counts.hard_declines) : null,
    latency_ms: latency,
  });
  const indexes = Array.from({ length: buckets }, (_, i) => i);
  const at = (i: number) => new Date(Date.parse(from) + i * step).toISOString();
  // ±1 approval against a soft decline, summing to 0 over every 4 buckets.
  const wobble = [-1, 0, 1, 0];
  const stripe = indexes.map((i) => ({
    at: at(i),
    ...point(
      { attempts: 42, approvals: 38 + wobble[i % 4], hard_declines: 2, soft_declines: 2 - wobble[i % 4], transport_errors: 0, unknown: 0 },
      { mean: 170 + (i % 6) * 4, p50: 150, p95: 400 + (i % 6) * 12, p99: 760 },
    ),
  }));
  const adyen = indexes.map((i) => ({
    at: at(i),
    ...(i < healthyUntil
      ? point({ attempts: 20, approvals: 18, hard_declines: 1, soft_declines: 1, transport_errors: 0, unknown: 0 }, { mean: 240 + (i % 5) * 6, p50: 220, p95: 600, p99: 900 })
      : i < failingUntil
        ? point({ attempts: 20, approvals: 3, hard_declines: 1, soft_declines: 2, transport_errors: 11, unknown: 3 }, { mean: 2900, p50: 2600, p95: 5000, p99: 5000 })
        : point({ attempts: 0, approvals: 0, hard_declines: 0, soft_declines: 0, transport_errors: 0, unknown: 0 }, { mean: null, p50: null, p95: null, p99: null })),
  }));
  const totals = (series: AnalyticsPoint[], latency: AnalyticsPoint['latency_ms']) => {
    const sum = (k: 'attempts' | 'approvals' | 'hard_declines' | 'soft_declines' | 'transport_errors' | 'unknown') => series.reduce((n, s) => n + s[k], 0);
    return point({ attempts: sum('attempts'), approvals: sum('approvals'), hard_declines: sum('hard_declines'), soft_declines: sum('soft_declines'), transport_errors: sum('transport_errors'), unknown: sum('unknown') }, latency);
  };
  return {
    from,
    to,
    interval,
    providers: [
      { provider_config_id: 'ppc_stripe_cards', name: 'Stripe · cards', circuit: 'closed', totals: totals(stripe, { mean: 180, p50: 150, p95: 430, p99: 780 }), series: stripe },
      { provider_config_id: 'ppc_adyen_cards', name: 'Adyen · cards', circuit: 'open', totals: totals(adyen, { mean: 598, p50: 260, p95: 4800, p99: 5000 }), series: adyen },
    ],
  };
}
