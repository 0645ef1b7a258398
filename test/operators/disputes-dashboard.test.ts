import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { envTable } from '../../db/environments';
import { disputeIdOf } from '../../lib/ids';
import { bearer, type RunningWorker, startStack, startWorker, type TestStack } from '../support/stack';
import { CARDS, startSimulator, type TestSimulator } from '../support/payments';
import { DISPUTE_CARDS, disputeFixture, disputeOf, getDispute, paidWith } from '../disputes/support';
import { buildDashboard } from './support';
import { HAS_CHROMIUM, launchChromium } from '../support/chromium';

// The Disputes section of the dashboard in headless Chromium, against the real API, Postgres, Temporal
// and the sandbox processor: the list with the time left to answer, a dispute's page, who is offered
// the evidence form, and (through the dispute engine) evidence saved and submitted from it.

const ROOT = join(__dirname, '..', '..');
// SB_SCREENSHOTS=1 refreshes the docs' screenshots; otherwise they go to the scratch folder.
const SHOTS = process.env.SB_SCREENSHOTS === '1' ? join(ROOT, 'docs', 'screenshots') : join(ROOT, 'test', '.tmp', 'screenshots');
const DAY = 86_400_000;

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let browser: Browser;
let page: Page;
let f: Awaited<ReturnType<typeof disputeFixture>>;
let paymentId: string;
/** Rows written as the dispute engine writes them: the pages read nothing else. */
const d = {} as Record<'open' | 'inquiry' | 'overdue' | 'won', string>;
/** A secret key that may read disputes (and payments) but answer none. */
let readOnlyKey: string;

/** A dispute row on the fixture's captured charge; created `ageMs` ago. */
async function insertDispute(name: keyof typeof d, ageMs: number, over: Record<string, unknown>) {
  const payment = (await stack.http.get(`/v1/payments/${paymentId}?include_charges=true`).set(bearer(f.merchant.secretKey))).body.data;
  const charge = payment.charges.find((c: { status: string }) => c.status === 'CAPTURED');
  const processorId = `du_dash_${name}_${Date.now()}`;
  d[name] = disputeIdOf(charge.payment_provider_config_id, processorId);
  const created = new Date(Date.now() - ageMs);
  await stack.db(envTable('sandbox', 'disputes')).insert({
    id: d[name], account_id: payment.account_id, payment_id: paymentId, charge_id: charge.id,
    payment_provider_config_id: charge.payment_provider_config_id, processor_dispute_id: processorId, amount: 4200, currency: 'USD',
    reason: 'fraudulent', status: 'NEEDS_RESPONSE', status_at: created, is_inquiry: false, created_at: created, updated_at: created,
    ...over,
    evidence: JSON.stringify(over.evidence ?? {}), balance_transactions: JSON.stringify(over.balance_transactions ?? []),
  });
}

async function signIn(credential: string) {
  await page?.close();
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  await page.goto(`${stack.baseUrl}/dashboard`);
  await page.getByLabel('API key or JWT').fill(credential);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('payments-table').or(page.getByText('No payments yet')).waitFor();
}

const row = (id: string) => page.locator(`tr[data-dispute="${id}"]`);
const withdrawn = (at: Date) => ({ kind: 'withdrawn', amount: 4200, fee: 1500, currency: 'USD', event_id: 'pe_dash_1', at: at.toISOString() });

describe.skipIf(!HAS_CHROMIUM)('disputes in the dashboard', () => {
  beforeAll(async () => {
    sim = await startSimulator();
    stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '5000' });
    worker = await startWorker(stack);
    f = await disputeFixture(stack);
    paymentId = await paidWith(stack, f.merchant, CARDS.visa);

    const now = Date.now();
    await insertDispute('won', 20 * DAY, {
      status: 'WON', evidence_due_by: new Date(now - 13 * DAY), evidence_submitted_at: new Date(now - 15 * DAY),
      evidence: { customer_name: 'Jenny Rosen', uncategorized_text: 'Delivered; signed for.' },
      balance_transactions: [withdrawn(new Date(now - 20 * DAY)), { ...withdrawn(new Date(now - 14 * DAY)), kind: 'reinstated', fee: 0, event_id: 'pe_dash_2' }],
    });
    await insertDispute('overdue', 9 * DAY, { evidence_due_by: new Date(now - 2 * DAY), overdue_at: new Date(now - 2 * DAY) });
    await insertDispute('inquiry', 60_000, {
      status: 'WARNING_NEEDS_RESPONSE', is_inquiry: true, reason: 'unrecognized', evidence_due_by: new Date(now + 5 * 3_600_000 + 30 * 60_000),
    });
    await insertDispute('open', 0, {
      evidence_due_by: new Date(now + 7 * DAY - 60_000), balance_transactions: [withdrawn(new Date(now))],
      evidence: { customer_name: 'Jenny Rosen' },
    });

    const key = await stack.http.post('/v1/api-keys').set(bearer(f.merchant.secretKey))
      .send({ name: 'disputes desk', permissions: { account: ['read'], payment: ['read'], dispute: ['read'] } });
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

  it('lists the disputes newest first with amount, reason, status and the time left to answer, filtered by status', async () => {
    await signIn(f.merchant.secretKey);
    await page.getByRole('navigation').getByRole('link', { name: 'Disputes' }).click();
    const table = page.getByTestId('disputes-table');
    await table.waitFor();
    expect(page.url()).toBe(`${stack.baseUrl}/dashboard/disputes`);
    await expect.poll(() => table.locator('tbody tr').count()).toBe(4);
    expect(await table.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-dispute'))))
      .toEqual([d.open, d.inquiry, d.overdue, d.won]);
    expect(await row(d.open).textContent()).toMatch(/\$42\.00.*Needs response.*Fraudulent/);
    expect(await row(d.open).getByTestId('time-left').textContent()).toBe('6 d 23 h left');
    expect(await row(d.inquiry).textContent()).toMatch(/Inquiry: needs response.*Unrecognized · inquiry/);
    expect(await row(d.inquiry).getByTestId('time-left').textContent()).toMatch(/^5 h (29|30) min left$/);
    expect(await row(d.inquiry).locator('[data-due]').getAttribute('data-due')).toBe('urgent');
    expect(await row(d.overdue).getByTestId('time-left').textContent()).toBe('Overdue');
    expect(await row(d.won).textContent()).toContain('Won');
    expect(await row(d.won).getByTestId('time-left').textContent()).toBe('—');
    expect(await row(d.open).getByRole('link', { name: paymentId }).getAttribute('href')).toBe(`/dashboard/payments/${paymentId}`);
    await page.screenshot({ path: join(SHOTS, 'disputes.png'), fullPage: true });

    await page.getByRole('group', { name: 'Filter by status' }).getByRole('button', { name: 'Needs response', exact: true }).click();
    await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
    expect(page.url()).toContain('status=NEEDS_RESPONSE');
    await page.getByRole('group', { name: 'Filter by status' }).getByRole('button', { name: 'Lost' }).click();
    await page.getByText('No disputes that are lost').waitFor();
  });

  it('opens a dispute: its facts, the money it withdrew, its payment and workflow, and the evidence form', async () => {
    await page.goto(`${stack.baseUrl}/dashboard/disputes`);
    await row(d.open).locator('td').first().click();
    await page.getByTestId('dispute-status').getByText('Needs response').waitFor();
    expect(page.url()).toBe(`${stack.baseUrl}/dashboard/disputes/${d.open}`);
    expect(await page.getByTestId('dispute-status').textContent()).toContain('$42.00');
    expect(await page.locator('[data-fact="Reason"]').textContent()).toContain('Fraudulent');
    expect(await page.locator('[data-fact="Respond by"]').textContent()).toContain('6 d 23 h left');
    expect(await page.getByTestId('respond-callout').textContent()).toContain('Submit evidence to contest it');
    const money = page.getByTestId('balance-transactions');
    expect(await money.locator('tr[data-kind="withdrawn"]').textContent()).toMatch(/Withdrawn.*-\$42\.00.*-\$15\.00.*-\$57\.00/);
    expect(await page.getByTestId('balance-net').textContent()).toBe('-$57.00');
    expect(await page.getByTestId('temporal-link').getAttribute('href')).toContain(encodeURIComponent(`dispute/${d.open}`));

    const form = page.getByTestId('evidence-form');
    await form.waitFor();
    expect(await form.getByLabel('Customer name').inputValue()).toBe('Jenny Rosen');
    expect(await form.getByRole('button', { name: 'Save' }).isDisabled()).toBe(true);
    await form.getByLabel('Product description').fill('A year of the Pro plan, delivered by email on signup.');
    expect(await form.getByRole('button', { name: 'Save' }).isDisabled()).toBe(false);
    // From the top: a full-page shot of a scrolled page repeats the sticky top bar mid-page.
    await page.evaluate('window.scrollTo(0, 0)');
    await page.screenshot({ path: join(SHOTS, 'disputes-detail.png'), fullPage: true });

    await page.locator('[data-fact="Payment"]').getByRole('link').click();
    await page.getByTestId('charges-table').waitFor();
    expect(page.url()).toBe(`${stack.baseUrl}/dashboard/payments/${paymentId}`);
  });

  it('shows a decided dispute its evidence read-only, with what was given back', async () => {
    await page.goto(`${stack.baseUrl}/dashboard/disputes/${d.won}`);
    await page.getByTestId('dispute-status').getByText('Won').waitFor();
    await page.getByTestId('saved-evidence').waitFor();
    expect(await page.getByTestId('saved-evidence').textContent()).toMatch(/Customer name.*Jenny Rosen.*Other information.*Delivered; signed for\./);
    expect(await page.getByTestId('balance-net').textContent()).toBe('-$15.00');
    expect(await page.getByTestId('evidence-form').count()).toBe(0);
    expect(await page.getByText('the amount was given back').count()).toBe(1);

    await page.goto(`${stack.baseUrl}/dashboard/disputes/${d.overdue}`);
    await page.getByTestId('overdue-callout').waitFor();
    expect(await page.getByTestId('evidence-form').count()).toBe(0);
  });

  it('offers a dispute:read credential no evidence form and no Accept', async () => {
    await signIn(readOnlyKey);
    await page.goto(`${stack.baseUrl}/dashboard/disputes/${d.open}`);
    await page.getByTestId('dispute-status').getByText('Needs response').waitFor();
    await page.getByTestId('saved-evidence').waitFor();
    // The permissions have been read once the page's requests settle.
    await page.waitForLoadState('networkidle');
    expect(await page.getByTestId('evidence-form').count()).toBe(0);
    expect(await page.getByRole('button', { name: /Accept/ }).count()).toBe(0);
    expect(await page.getByTestId('saved-evidence').textContent()).toContain('Jenny Rosen');
  });

  // Through the dispute engine: the sandbox disputes a charge made with the fraudulent test card.
  it('saves evidence, then submits it: the dispute goes under review and is won', async () => {
    const disputedPayment = await paidWith(stack, f.merchant, DISPUTE_CARDS.fraudulent);
    const dispute = await disputeOf(stack, f.merchant, disputedPayment);
    await signIn(f.merchant.secretKey);
    await page.goto(`${stack.baseUrl}/dashboard/disputes/${dispute.id}`);
    const form = page.getByTestId('evidence-form');
    await form.waitFor();
    await form.getByLabel('Customer name').fill('Jenny Rosen');
    await form.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Evidence saved.' }).waitFor();
    expect((await getDispute(stack, f.merchant, dispute.id)).evidence).toMatchObject({ customer_name: 'Jenny Rosen' });
    expect(await page.getByTestId('evidence-form').getByLabel('Customer name').inputValue()).toBe('Jenny Rosen');

    await form.getByLabel('Other information').fill('Delivered; signed for. winning_evidence');
    await form.getByRole('button', { name: 'Submit evidence…' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Submit now' }).click();
    await page.getByRole('status').filter({ hasText: 'Evidence submitted' }).waitFor();
    await page.getByTestId('dispute-status').getByText('Under review').waitFor();
    expect(await page.getByTestId('evidence-form').count()).toBe(0);
    expect(await page.getByTestId('saved-evidence').textContent()).toContain('winning_evidence');

    await disputeOf(stack, f.merchant, disputedPayment, (x) => x.status === 'WON');
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.getByTestId('dispute-status').getByText('Won').waitFor();
  });

  it('accepts a dispute from its page: lost at once', async () => {
    const disputedPayment = await paidWith(stack, f.merchant, DISPUTE_CARDS.fraudulent);
    const dispute = await disputeOf(stack, f.merchant, disputedPayment);
    await page.goto(`${stack.baseUrl}/dashboard/disputes/${dispute.id}`);
    await page.getByTestId('evidence-form').waitFor();
    await page.getByRole('button', { name: 'Accept dispute…' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Accept now' }).click();
    await page.getByRole('status').filter({ hasText: 'Accepted' }).waitFor();
    await page.getByTestId('dispute-status').getByText('Lost').waitFor();
    expect((await getDispute(stack, f.merchant, dispute.id)).status).toBe('LOST');
  });

  it('shows each provider config\'s dispute rate on the Providers page', async () => {
    await page.goto(`${stack.baseUrl}/dashboard/providers`);
    const card = page.locator(`article[data-provider="${f.config.id}"]`).getByTestId('dispute-rate');
    await card.waitFor();
    const from = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 59 * 60_000).toISOString();
    const res = await stack.http.get(`/v1/analytics/providers?from=${from}&interval=minute`).set(bearer(f.merchant.secretKey));
    const rate = res.body.data.providers.find((p: { provider_config_id: string }) => p.provider_config_id === f.config.id).disputes;
    // The fraudulent-card payments above were disputed by the engine, and the row inserted as just opened counts too; the inquiry does not.
    expect(rate.chargebacks).toBeGreaterThanOrEqual(3);
    expect(rate.captured_charges).toBeGreaterThanOrEqual(3);
    expect(await card.locator('[data-fact="Chargebacks"] dd').textContent()).toBe(String(rate.chargebacks));
    expect(await card.locator('[data-fact="Captured charges"] dd').textContent()).toBe(String(rate.captured_charges));
    expect(await card.locator('[data-fact="Dispute rate"] dd').textContent()).toBe(`${(rate.dispute_rate * 100).toFixed(2)}%`);
    expect(await card.locator('[data-fact="Dispute rate"] dd').getAttribute('class')).toBe('alert');
    await page.screenshot({ path: join(SHOTS, 'disputes-providers.png'), fullPage: true });
  });
});
