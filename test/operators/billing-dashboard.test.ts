import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { bearer, type RunningWorker, startStack, startWorker, type TestStack } from '../support/stack';
import { startSimulator, type TestSimulator } from '../support/payments';
import { advanceClock, api, billingFixture, type BillingFixture, customerWithCard, monthlyPrice, newClock } from '../billing/support';
import { buildDashboard } from './support';
import { HAS_CHROMIUM, launchChromium } from '../support/chromium';

// The Billing section of the dashboard in headless Chromium, against the real API, Postgres, Temporal
// and the sandbox processor: subscriptions and their invoices as an operator sees them, and "Retry now"
// on an invoice that dunning left open.

const ROOT = join(__dirname, '..', '..');
// SB_SCREENSHOTS=1 refreshes the docs' screenshots; otherwise they go to the scratch folder.
const SHOTS = process.env.SB_SCREENSHOTS === '1' ? join(ROOT, 'docs', 'screenshots') : join(ROOT, 'test', '.tmp', 'screenshots');

const START = '2026-03-01T00:00:00.000Z';
const RENEWAL = '2026-04-01T00:00:00.000Z';

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let browser: Browser;
let page: Page;
let f: BillingFixture;
/** Paid at creation with the saved card: ACTIVE, one PAID invoice. */
let active: { id: string; latest_invoice_id: string; current_period_end: string };
/** On a test clock whose renewal was declined: PAST_DUE, its renewal invoice OPEN. */
let pastDue: { id: string };
let openInvoiceId: string;
/** A secret key that may read billing (and payments) but change nothing. */
let readOnlyKey: string;

/** Every new authorization of the fixture's config declines with `code` (null: approves again). */
async function declineWith(code: string | null) {
  const res = await stack.http.put(`/v1/payment-provider-configs/${f.config.id}`).set(bearer(f.merchant.token))
    .send({ credentials: { api_key: 'sim_billing_key_0001', simulate: code ? { decline_code: code } : {} } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function subscribe(extra: Record<string, unknown> = {}) {
  const price = await monthlyPrice(stack, f.merchant, 1900, 'Pro plan');
  const { customerId, paymentMethodId } = await customerWithCard(stack, f.merchant);
  return api(stack, f.merchant).post('/v1/subscriptions', {
    customer_id: customerId, items: [{ price_id: price.id }], default_payment_method_id: paymentMethodId, ...extra,
  }, 201);
}

async function signIn(credential: string) {
  await page?.close();
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  await page.goto(`${stack.baseUrl}/dashboard`);
  await page.getByLabel('API key or JWT').fill(credential);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('payments-table').or(page.getByText('No payments yet')).waitFor();
}

const subscriptionRow = (id: string) => page.locator(`tr[data-subscription="${id}"]`);
const dateOf = (iso: string) => new Intl.DateTimeFormat('en-US', { dateStyle: 'medium' }).format(new Date(iso));

describe.skipIf(!HAS_CHROMIUM)('subscriptions and invoices in the dashboard', () => {
  beforeAll(async () => {
    sim = await startSimulator();
    stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '5000' });
    worker = await startWorker(stack);
    f = await billingFixture(stack);

    active = await subscribe({ metadata: { plan: 'pro' } });
    expect(active).toMatchObject({ status: 'ACTIVE' });
    const clock = await newClock(stack, f.merchant, START);
    pastDue = await subscribe({ test_clock_id: clock.id });
    await declineWith('insufficient_funds');
    await advanceClock(stack, f.merchant, clock.id, RENEWAL);
    // Approving again: "Retry now" then pays.
    await declineWith(null);
    const open = await api(stack, f.merchant).get(`/v1/invoices?subscription_id=${pastDue.id}&status=OPEN`);
    expect(open).toHaveLength(1);
    openInvoiceId = open[0].id;

    const key = await stack.http.post('/v1/api-keys').set(bearer(f.merchant.secretKey))
      .send({ name: 'billing desk', permissions: { account: ['read'], payment: ['read'], billing: ['read'] } });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    readOnlyKey = key.body.data.key;

    await buildDashboard();
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
  }, 240_000);
  afterAll(async () => {
    await browser?.close();
    await worker?.stop();
    await stack?.close();
    await sim?.close();
  });

  it('lists the subscriptions with status and next renewal, filtered by status', async () => {
    await signIn(f.merchant.secretKey);
    await page.getByRole('navigation').getByRole('link', { name: 'Billing' }).click();
    const table = page.getByTestId('subscriptions-table');
    await table.waitFor();
    expect(page.url()).toBe(`${stack.baseUrl}/dashboard/billing`);
    await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
    expect(await subscriptionRow(active.id).textContent()).toContain('Active');
    expect(await subscriptionRow(active.id).getByTestId('next-renewal').textContent()).toBe(dateOf(active.current_period_end));
    expect(await subscriptionRow(pastDue.id).textContent()).toContain('Past due');
    await page.screenshot({ path: join(SHOTS, 'billing-subscriptions.png'), fullPage: true });

    await page.getByRole('group', { name: 'Filter by status' }).getByRole('button', { name: 'Past due' }).click();
    await expect.poll(() => table.locator('tbody tr').count()).toBe(1);
    expect(page.url()).toContain('status=PAST_DUE');
    await subscriptionRow(pastDue.id).waitFor();
  });

  it('opens a subscription: items, period, its workflow, and its paid invoice linked to the payment', async () => {
    await page.goto(`${stack.baseUrl}/dashboard/billing`);
    await subscriptionRow(active.id).locator('td').first().click();
    await page.getByTestId('items-table').waitFor();
    expect(page.url()).toBe(`${stack.baseUrl}/dashboard/billing/subscriptions/${active.id}`);
    await page.getByTestId('subscription-status').getByText('Active').waitFor();
    await expect.poll(() => page.getByTestId('items-table').locator('tbody tr').first().textContent()).toContain('$19.00');
    expect(await page.locator('[data-fact="Cancel at period end"]').textContent()).toContain('No');
    expect(await page.getByTestId('temporal-link').getAttribute('href')).toContain(encodeURIComponent(`subscription/${active.id}`));

    const invoices = page.getByTestId('invoices-table');
    await invoices.waitFor();
    const row = page.locator(`tr[data-invoice="${active.latest_invoice_id}"]`);
    expect(await row.textContent()).toMatch(/\$19\.00.*Paid/);
    await page.screenshot({ path: join(SHOTS, 'billing-subscription.png'), fullPage: true });
    const invoice = await api(stack, f.merchant).get(`/v1/invoices/${active.latest_invoice_id}`);
    await row.getByRole('link', { name: invoice.payment_id }).click();
    await page.getByTestId('charges-table').waitFor();
    expect(page.url()).toBe(`${stack.baseUrl}/dashboard/payments/${invoice.payment_id}`);
    expect(await page.locator('.detail-amount').textContent()).toMatch(/\$19\.00.*Succeeded/);
  });

  it('shows a billing:read credential the open invoice without "Retry now"', async () => {
    await signIn(readOnlyKey);
    await page.goto(`${stack.baseUrl}/dashboard/billing/invoices/${openInvoiceId}`);
    await page.getByTestId('invoice-status').getByText('Open').waitFor();
    await page.getByTestId('invoice-attempts').waitFor();
    // The permissions have been read once the header's actions settle.
    await page.waitForLoadState('networkidle');
    expect(await page.getByRole('button', { name: 'Retry now' }).count()).toBe(0);
  });

  it('lists open invoices; an invoice shows lines and attempts, and "Retry now" pays it', async () => {
    await signIn(f.merchant.secretKey);
    await page.goto(`${stack.baseUrl}/dashboard/billing/invoices`);
    await page.getByRole('group', { name: 'Filter by status' }).getByRole('button', { name: 'Open' }).click();
    const table = page.getByTestId('invoices-table');
    await expect.poll(() => table.locator('tbody tr').count()).toBe(1);
    await page.locator(`tr[data-invoice="${openInvoiceId}"]`).locator('td').first().click();

    await page.getByTestId('invoice-status').getByText('Open').waitFor();
    expect(await page.getByTestId('invoice-lines').textContent()).toContain('$19.00');
    const attempts = page.getByTestId('invoice-attempts').locator('tbody tr');
    expect(await attempts.count()).toBe(1);
    expect(await attempts.first().textContent()).toMatch(/#1.*Failed.*insufficient_funds/);
    const failedPayment = await attempts.first().getByRole('link').textContent();
    expect(await attempts.first().getByRole('link').getAttribute('href')).toBe(`/dashboard/payments/${failedPayment}`);
    expect(await page.getByTestId('open-callout').textContent()).toContain('Dunning tries again');
    await page.screenshot({ path: join(SHOTS, 'billing-invoice.png'), fullPage: true });

    await page.getByRole('button', { name: 'Retry now' }).click();
    await page.getByRole('status').filter({ hasText: 'Paid' }).waitFor();
    await page.getByTestId('invoice-status').getByText('Paid').waitFor();
    expect(await page.getByRole('button', { name: 'Retry now' }).count()).toBe(0);
    await expect.poll(() => attempts.count()).toBe(2);
    expect(await attempts.nth(1).textContent()).toMatch(/#2.*Succeeded/);
    expect((await api(stack, f.merchant).get(`/v1/invoices/${openInvoiceId}`)).status).toBe('PAID');
    expect((await api(stack, f.merchant).get(`/v1/subscriptions/${pastDue.id}`)).status).toBe('ACTIVE');
  });
});
