import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { bearer, type Merchant, type RunningWorker, sandboxMerchant, startStack, startWorker, type TestStack } from '../support/stack';
import { card, CARDS, startSimulator, type TestSimulator } from '../support/payments';
import { addFees, createConfig, createProvider } from '../support/routing';
import { buildDashboard, eventually } from './support';
import { HAS_CHROMIUM, launchChromium } from '../support/chromium';

// The Checkout section of the dashboard in headless Chromium, against the real API, Postgres, Temporal
// and the sandbox processor: sessions and payment links as an operator sees and changes them.

const ROOT = join(__dirname, '..', '..');
// SB_SCREENSHOTS=1 refreshes the docs' screenshots; otherwise they go to the scratch folder.
const SHOTS = process.env.SB_SCREENSHOTS === '1' ? join(ROOT, 'docs', 'screenshots') : join(ROOT, 'test', '.tmp', 'screenshots');

interface Session { id: string; url: string; payment_id: string; client_secret: string; status: string }

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let browser: Browser;
let page: Page;
let m: Merchant;
let paid: Session;
let open: Session;
let link: { id: string; url: string };
/** A secret key that may read checkout sessions and links but not change them. */
let readOnlyKey: string;

/** A sandbox merchant whose sessions' payments are routed to the sandbox processor. */
async function checkoutMerchant(): Promise<Merchant> {
  const merchant = await sandboxMerchant(stack);
  const provider = await createProvider(stack, { sandbox: true });
  const config = await createConfig(stack, merchant, provider.id, { credentials: { api_key: 'sim_checkout_key_0001' } });
  await addFees(stack, merchant, config, provider, 2.9);
  return merchant;
}

/** A session of `m`: two T-shirts at $15.00 unless `body` says otherwise. */
async function createSession(body: Record<string, unknown> = {}): Promise<Session> {
  const res = await stack.http.post('/v1/checkout-sessions').set(bearer(m.secretKey)).send({
    line_items: [{ name: 'T-shirt', quantity: 2, unit_amount: 1500 }],
    success_url: 'https://shop.example.test/success',
    cancel_url: 'https://shop.example.test/cart',
    ...body,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

async function getSession(id: string) {
  const res = await stack.http.get(`/v1/checkout-sessions/${id}`).set(bearer(m.secretKey));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

/** Signs in with `credential` in a new browser context (a tab of its own: nothing kept from before). */
async function signIn(credential: string) {
  await page?.close();
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  await page.goto(`${stack.baseUrl}/dashboard`);
  await page.getByLabel('API key or JWT').fill(credential);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('payments-table').or(page.getByText('No payments yet')).waitFor();
}

const sessionRow = (id: string) => page.locator(`tr[data-session="${id}"]`);

describe.skipIf(!HAS_CHROMIUM)('checkout sessions and payment links in the dashboard', () => {
  beforeAll(async () => {
    sim = await startSimulator();
    stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '2000' });
    worker = await startWorker(stack);
    m = await checkoutMerchant();

    // One session paid with the secret key (the merchant's server), one left open.
    paid = await createSession({ metadata: { order: 'ord_41' } });
    const confirmed = await stack.http.post(`/v1/payments/${paid.payment_id}/confirm`).set(bearer(m.secretKey)).send({ payment_method: card(CARDS.visa) });
    expect(confirmed.body.data?.status, JSON.stringify(confirmed.body)).toBe('SUCCEEDED');
    await eventually(async () => ((await getSession(paid.id)).status === 'COMPLETE' ? true : undefined), 30_000);
    open = await createSession({
      line_items: [{ name: 'Mug', quantity: 1, unit_amount: 1200 }, { name: 'Sticker', quantity: 3, unit_amount: 200 }],
      metadata: { order: 'ord_42' },
    });
    const created = await stack.http.post('/v1/payment-links').set(bearer(m.secretKey)).send({ line_items: [{ name: 'Gift card', quantity: 1, unit_amount: 5000 }] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    link = created.body.data;
    const key = await stack.http.post('/v1/api-keys').set(bearer(m.secretKey))
      .send({ name: 'support desk', permissions: { account: ['read'], payment: ['read'], checkout: ['read'] } });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    readOnlyKey = key.body.data.key;

    await buildDashboard();
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await worker?.stop();
    await stack?.close();
    await sim?.close();
  });

  it('lists the sessions with status, items and their payments, filtered by status', async () => {
    await signIn(m.secretKey);
    await page.getByRole('navigation').getByRole('link', { name: 'Checkout' }).click();
    const table = page.getByTestId('sessions-table');
    await table.waitFor();
    expect(page.url()).toBe(`${stack.baseUrl}/dashboard/checkout`);
    await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
    // Newest first.
    expect(await table.locator('tbody tr').first().getAttribute('data-session')).toBe(open.id);
    expect(await sessionRow(open.id).textContent()).toMatch(/\$18\.00.*Open.*Unpaid.*Mug, 3 × Sticker/);
    expect(await sessionRow(paid.id).textContent()).toMatch(/\$30\.00.*Complete.*Paid.*2 × T-shirt/);
    expect(await sessionRow(open.id).getByRole('link', { name: open.payment_id }).getAttribute('href')).toBe(`/dashboard/payments/${open.payment_id}`);
    await page.screenshot({ path: join(SHOTS, 'checkout-sessions.png'), fullPage: true });

    const filters = page.getByRole('group', { name: 'Filter by status' });
    await filters.getByRole('button', { name: 'Complete' }).click();
    await expect.poll(() => table.locator('tbody tr').count()).toBe(1);
    expect(page.url()).toContain('status=COMPLETE');
    expect(await table.locator('tbody tr').first().getAttribute('data-session')).toBe(paid.id);
    await filters.getByRole('button', { name: 'Expired' }).click();
    await page.getByText('No expired sessions').waitFor();
  });

  it('opens a session: its lines and total, its URLs without the client secret, and follows to its payment', async () => {
    await page.goto(`${stack.baseUrl}/dashboard/checkout`);
    await sessionRow(open.id).getByText('$18.00').click();
    const lines = page.getByTestId('line-items');
    await lines.waitFor();
    expect(page.url()).toBe(`${stack.baseUrl}/dashboard/checkout/sessions/${open.id}`);
    expect(await lines.locator('tbody tr').allTextContents()).toEqual(['Mug1$12.00$12.00', 'Sticker3$2.00$6.00', 'Total$18.00']);
    expect(await page.getByTestId('session-url').textContent()).toBe(open.url);
    expect(await page.getByTestId('session-urls').textContent()).toContain('https://shop.example.test/cart');
    await expect.poll(() => page.locator('[data-fact="Payment"]').textContent()).toContain('Created');
    expect(await page.content()).not.toContain(open.client_secret);

    await page.locator('[data-fact="Payment"]').getByRole('link', { name: open.payment_id }).click();
    await page.getByTestId('charges-table').or(page.getByText('No charges yet')).waitFor();
    expect(page.url()).toBe(`${stack.baseUrl}/dashboard/payments/${open.payment_id}`);
    expect(await page.locator('.detail-amount').textContent()).toContain('$18.00');
    // …and back from the payment to its session.
    await page.getByRole('link', { name: open.id }).click();
    await page.getByTestId('session-urls').waitFor();
    expect(page.url()).toBe(`${stack.baseUrl}/dashboard/checkout/sessions/${open.id}`);
  });

  it('expires an open session from its button: the session is EXPIRED and its payment canceled', async () => {
    await page.goto(`${stack.baseUrl}/dashboard/checkout/sessions/${open.id}`);
    const status = page.getByTestId('session-status');
    await status.getByText('Open').waitFor();
    await page.getByRole('button', { name: 'Expire session' }).click();
    await page.getByRole('button', { name: 'Expire now' }).click();
    await page.getByRole('status').filter({ hasText: 'Session expired' }).waitFor();
    await status.getByText('Expired').waitFor();
    expect(await page.getByRole('button', { name: 'Expire session' }).count()).toBe(0);
    expect((await getSession(open.id)).status).toBe('EXPIRED');
    await eventually(async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      return (await page.locator('[data-fact="Payment"]').textContent())?.includes('Canceled') ? true : undefined;
    });

    await page.goto(`${stack.baseUrl}/dashboard/checkout?status=EXPIRED`);
    await sessionRow(open.id).waitFor();
    expect(await sessionRow(open.id).textContent()).toContain('Expired');
  });

  it('lists the payment link and disables it: its URL then answers 410', async () => {
    await page.goto(`${stack.baseUrl}/dashboard/checkout`);
    await page.getByRole('navigation', { name: 'Checkout' }).getByRole('link', { name: 'Payment links' }).click();
    const table = page.getByTestId('links-table');
    await table.waitFor();
    const row = page.locator(`tr[data-link="${link.id}"]`);
    expect(await row.textContent()).toMatch(/\$50\.00.*Active.*Gift card/);
    expect(await row.textContent()).toContain(link.url);

    await row.getByText('$50.00').click();
    await page.getByTestId('link-url').waitFor();
    expect(await page.getByTestId('link-url').textContent()).toBe(link.url);
    await page.getByRole('button', { name: 'Disable link' }).click();
    await page.getByRole('status').filter({ hasText: 'Link disabled' }).waitFor();
    await page.getByTestId('link-status').getByText('Inactive').waitFor();
    await page.getByRole('button', { name: 'Enable link' }).waitFor();
    expect((await stack.http.get(`/v1/payment-links/${link.id}`).set(bearer(m.secretKey))).body.data.active).toBe(false);
    expect((await stack.http.get(new URL(link.url).pathname)).status).toBe(410);

    await page.goto(`${stack.baseUrl}/dashboard/checkout/links?active=false`);
    await row.waitFor();
    expect(await table.locator('tbody tr').count()).toBe(1);
  });

  it('offers no change to a credential that may only read: the refusal disables Expire and the link toggle', async () => {
    const another = await createSession();
    await signIn(readOnlyKey);
    await page.goto(`${stack.baseUrl}/dashboard/checkout/sessions/${another.id}`);
    await page.getByRole('button', { name: 'Expire session' }).click();
    await page.getByRole('button', { name: 'Expire now' }).click();
    await page.getByRole('status').filter({ hasText: 'checkout:write' }).waitFor();
    expect(await page.getByRole('button', { name: 'Expire session' }).isDisabled()).toBe(true);
    expect((await getSession(another.id)).status).toBe('OPEN');

    // Known from the refusal, for the rest of the sign-in: the link's toggle is disabled before any click.
    await page.goto(`${stack.baseUrl}/dashboard/checkout/links/${link.id}`);
    await page.getByTestId('link-url').waitFor();
    expect(await page.getByRole('button', { name: 'Enable link' }).isDisabled()).toBe(true);
  });
});
