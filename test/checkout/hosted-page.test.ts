import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { bearer, type Merchant, type RunningWorker, startStack, startWorker, type TestStack } from '../support/stack';
import { startSimulator, type TestSimulator } from '../support/payments';
import { TOO_MANY_ATTEMPTS } from '../../api/checkout-page/state';
import {
  CARDS, checkoutMerchant, createSession, cspViolations, fillCard, futureExpiry, HAS_CHROMIUM, launchChromium, type Shop, startShop,
} from './hosted-page-support';

// The hosted checkout page in headless Chromium (docs/checkout.md), against the real API, Postgres,
// Temporal and the sandbox processor: a customer who only has a browser, no JavaScript of the merchant's.

const SHOTS = join(__dirname, '..', '.tmp', 'screenshots');

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let browser: Browser;
let m: Merchant;
let shop: Shop;

const payButton = (page: Page) => page.getByRole('button', { name: /^Pay / });

/** The form posted as a browser without JavaScript posts it. */
const postCard = (url: string, number: string) => fetch(url, {
  method: 'POST', body: new URLSearchParams({ number, expiry: futureExpiry(), cvc: '123' }), redirect: 'manual',
});

async function openPage(url: string, viewport = { width: 1024, height: 800 }) {
  const page = await browser.newPage({ viewport });
  const violations = cspViolations(page);
  await page.goto(url);
  return { page, violations };
}

describe.skipIf(!HAS_CHROMIUM)('the hosted checkout page', () => {
  beforeAll(async () => {
    sim = await startSimulator();
    stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '2000' });
    worker = await startWorker(stack);
    m = await checkoutMerchant(stack);
    shop = await startShop();
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await shop?.close();
    await worker?.stop();
    await stack?.close();
    await sim?.close();
  });

  it('takes a card and lands the customer on success_url with the session id', async () => {
    const session = await createSession(stack, m, shop);
    expect(session.url).toBe(`${stack.baseUrl}/checkout/${session.id}`);
    const { page, violations } = await openPage(session.url);
    expect(await page.locator('#merchant-name').textContent()).toBe('Sandbox');
    expect(await page.locator('#total').textContent()).toBe('$30.00');
    expect(await page.locator('#line-items').textContent()).toContain('T-shirt × 2$30.00');
    await page.screenshot({ path: join(SHOTS, 'checkout-form.png'), fullPage: true });

    await fillCard(page, CARDS.visa, { name: 'Ada Lovelace' });
    expect(await payButton(page).textContent()).toBe('Pay $30.00');
    await payButton(page).click();
    await page.waitForURL(`${shop.url}/success?session_id=${session.id}`);
    expect(shop.visits).toContain(`/success?session_id=${session.id}`);
    expect(violations).toEqual([]);

    const paid = await stack.http.get(`/v1/payments/${session.payment_id}`).set(bearer(m.secretKey));
    expect(paid.body.data.status).toBe('SUCCEEDED');

    // The page of a paid session sends the customer on again, never to a form.
    const again = await fetch(session.url, { redirect: 'manual' });
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toBe(`${shop.url}/success?session_id=${session.id}`);
    await page.close();
  });

  it('takes the customer through 3-D Secure and back, then on to success_url', async () => {
    const session = await createSession(stack, m, shop);
    const { page, violations } = await openPage(session.url);
    await fillCard(page, CARDS.threeDSecure);
    await payButton(page).click();
    // Our page sends the browser to the bank by itself (meta refresh); its link does the same.
    await page.waitForURL(`${sim.url}/challenge/**`);
    await page.click('#complete');
    await page.waitForURL(`${shop.url}/success?session_id=${session.id}`);
    expect(violations).toEqual([]);
    const paid = await stack.http.get(`/v1/payments/${session.payment_id}`).set(bearer(m.secretKey));
    expect(paid.body.data.status).toBe('SUCCEEDED');
    await page.close();
  });

  it('works with JavaScript turned off, 3-D Secure included', async () => {
    const session = await createSession(stack, m, shop);
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(session.url);
    await fillCard(page, CARDS.threeDSecure);
    await payButton(page).click();
    await page.waitForURL(`${sim.url}/challenge/**`);
    await page.click('#complete');
    await page.waitForURL(`${shop.url}/success?session_id=${session.id}`);
    await context.close();
  });

  it('takes the customer through 3-D Secure for an account whose return_url_hosts name only its shop', async () => {
    const other = await checkoutMerchant(stack);
    const hosts = await stack.http.put(`/v1/accounts/${other.account.id}/settings/return_url_hosts`).set(bearer(other.secretKey)).send({ hosts: ['127.0.0.1'] });
    expect(hosts.status, JSON.stringify(hosts.body)).toBe(200);
    // Switchboard on another host than the shop's: its own page is no host of the merchant's list.
    const publicUrl = stack.config.publicUrl;
    stack.config.publicUrl = publicUrl.replace('127.0.0.1', 'localhost');
    try {
      const session = await createSession(stack, other, shop);
      expect(new URL(session.url).hostname).toBe('localhost');
      const { page } = await openPage(session.url);
      await fillCard(page, CARDS.threeDSecure);
      await payButton(page).click();
      await page.waitForURL(`${sim.url}/challenge/**`);
      await page.click('#complete');
      await page.waitForURL(`${shop.url}/success?session_id=${session.id}`);
      await page.close();
    } finally {
      stack.config.publicUrl = publicUrl;
    }
  });

  it('thanks the customer itself when the success_url\'s host is no longer one the account allows', async () => {
    const other = await checkoutMerchant(stack);
    const session = await createSession(stack, other, shop);
    const hosts = await stack.http.put(`/v1/accounts/${other.account.id}/settings/return_url_hosts`).set(bearer(other.secretKey)).send({ hosts: ['shop.example.com'] });
    expect(hosts.status, JSON.stringify(hosts.body)).toBe(200);
    const posted = await postCard(session.url, CARDS.visa);
    expect(posted.status).toBe(303);
    expect(posted.headers.get('location')).toBe(`/checkout/${session.id}`);
    const done = await fetch(session.url, { redirect: 'manual' });
    expect(done.status).toBe(200);
    expect(await done.text()).toContain('Thank you: your payment is complete.');
  });

  it('shows the page that sends the customer to the bank while the payment waits for it', async () => {
    const session = await createSession(stack, m, shop);
    const form = new URLSearchParams({ number: CARDS.threeDSecure, expiry: futureExpiry(), cvc: '123' });
    const posted = await fetch(session.url, { method: 'POST', body: form, redirect: 'manual' });
    expect(posted.status).toBe(303);
    expect(posted.headers.get('location')).toBe(`/checkout/${session.id}`);
    const waiting = await fetch(session.url);
    const html = await waiting.text();
    expect(html).toContain('>Continue to your bank</a>');
    expect(html).toMatch(new RegExp(`<meta http-equiv="refresh" content="1; url=${sim.url}/challenge/`));
  });

  it('says a decline in plain words, whatever the issuer said, and takes another card on the same session', async () => {
    const session = await createSession(stack, m, shop);
    const { page } = await openPage(session.url);
    for (const declined of [CARDS.declined, CARDS.insufficientFunds]) {
      await fillCard(page, declined);
      await payButton(page).click();
      await page.locator('#message').waitFor();
      expect(await page.locator('#message').textContent()).toBe('Your card was declined.');
      const html = await page.content();
      expect(html).not.toMatch(/insufficient|card_declined|decline_code/i);
      // The form is back, empty of the card that was typed.
      expect(await page.getByLabel('Card number').inputValue()).toBe('');
    }
    await page.screenshot({ path: join(SHOTS, 'checkout-declined.png'), fullPage: true });
    await fillCard(page, CARDS.visa);
    await payButton(page).click();
    await page.waitForURL(`${shop.url}/success?session_id=${session.id}`);
    await page.close();
  });

  it('takes no more attempts once the payment refuses them, and says so without a form', async () => {
    const other = await checkoutMerchant(stack);
    const session = await createSession(stack, other, shop);
    // Two cards, so that no card's own decline budget is what stops them.
    for (const number of [CARDS.declined, CARDS.insufficientFunds, CARDS.declined, CARDS.insufficientFunds, CARDS.declined]) {
      const posted = await postCard(session.url, number);
      expect(posted.status).toBe(303);
    }
    const res = await fetch(session.url);
    const html = await res.text();
    expect(html).toContain(TOO_MANY_ATTEMPTS.replace(/'/g, '&#39;'));
    expect(html).not.toContain('<form');
    const posted = await postCard(session.url, CARDS.visa);
    expect(posted.status).toBe(303);
    const payment = await stack.http.get(`/v1/payments/${session.payment_id}`).set(bearer(other.secretKey));
    expect(payment.body.data).toMatchObject({ status: 'FAILED', last_error: { code: 'too_many_attempts' } });
  });

  it('refuses a card past its decline budget with a 429 and a clear message, before any processor sees it', async () => {
    const other = await checkoutMerchant(stack);
    for (let i = 0; i < 5; i += 1) expect((await postCard((await createSession(stack, other, shop)).url, CARDS.declined)).status).toBe(303);
    const session = await createSession(stack, other, shop);
    const charges = (await sim.stats()).charges.total;
    const refused = await postCard(session.url, CARDS.declined);
    expect(refused.status).toBe(429);
    const html = await refused.text();
    expect(html).toContain('Too many declined attempts. Please wait a while before you try again.');
    expect(html).toContain('<form');
    expect((await sim.stats()).charges.total).toBe(charges);
  });

  it('shows a wrong card\'s field errors with a 400, and never the number typed', async () => {
    const session = await createSession(stack, m, shop);
    const { page } = await openPage(session.url);
    await fillCard(page, '4242424242424241', { expiry: '01 / 20', cvc: '12', name: 'Ada <b>Lovelace</b>' });
    const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), payButton(page).click()]);
    expect(response.status()).toBe(400);
    const html = await response.text();
    expect(html).not.toContain('4242424242424241');
    expect(html).not.toContain('4242 4242 4242 4241');
    expect(html).toContain('Ada &#60;b&#62;Lovelace&#60;/b&#62;');
    expect(await page.locator('#number-error').textContent()).toBe('Enter a valid card number.');
    expect(await page.locator('#expiry-error').textContent()).toBe('Your card has expired.');
    expect(await page.locator('#cvc-error').textContent()).toBe('Enter the 3- or 4-digit security code.');
    expect(await page.getByLabel('Card number').getAttribute('aria-invalid')).toBe('true');
    // The payment was never tried.
    const payment = await stack.http.get(`/v1/payments/${session.payment_id}`).set(bearer(m.secretKey));
    expect(payment.body.data.status).toBe('CREATED');
    await page.close();
  });

  it('shows an expired session as such, with no form', async () => {
    const session = await createSession(stack, m, shop);
    const expired = await stack.http.post(`/v1/checkout-sessions/${session.id}/expire`).set(bearer(m.secretKey)).send({});
    expect(expired.status, JSON.stringify(expired.body)).toBe(200);
    const { page } = await openPage(session.url);
    expect(await page.locator('h1').textContent()).toBe('This checkout has expired');
    expect(await page.locator('form, input').count()).toBe(0);
    expect((await fetch(session.url)).status).toBe(410);
    // A form posted to it anyway charges nothing.
    const form = new URLSearchParams({ number: CARDS.visa, expiry: futureExpiry(), cvc: '123' });
    const posted = await fetch(session.url, { method: 'POST', body: form, redirect: 'manual' });
    expect(posted.status).toBe(303);
    const payment = await stack.http.get(`/v1/payments/${session.payment_id}`).set(bearer(m.secretKey));
    expect(payment.body.data.status).toBe('CANCELED');
    await page.close();
  });

  it('goes back to cancel_url by its cancel link', async () => {
    const session = await createSession(stack, m, shop);
    const { page } = await openPage(session.url);
    await page.getByRole('link', { name: 'Cancel and return to Sandbox' }).click();
    await page.waitForURL(`${shop.url}/cart`);
    expect(shop.visits).toContain('/cart');
    await page.close();
  });

  it('fits a 375 px phone: the Pay button is on screen without horizontal scrolling', async () => {
    const session = await createSession(stack, m, shop, { line_items: [{ name: 'A very long product name that a merchant might well give to its product', quantity: 3, unit_amount: 123456 }] });
    const { page } = await openPage(session.url, { width: 375, height: 667 });
    const widths = await page.evaluate('({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })') as { scroll: number; client: number };
    expect(widths.scroll).toBeLessThanOrEqual(widths.client);
    const button = payButton(page);
    await button.scrollIntoViewIfNeeded();
    const box = (await button.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(375);
    expect(await button.textContent()).toBe('Pay $3,703.68');
    await page.screenshot({ path: join(SHOTS, 'checkout-phone.png'), fullPage: true });
    await page.close();
  });

  it('can be filled and paid with the keyboard alone, with a visible focus', async () => {
    const session = await createSession(stack, m, shop);
    const { page } = await openPage(session.url);
    const order: string[] = [];
    const typed: Record<string, string> = { number: CARDS.visa, expiry: futureExpiry(), cvc: '123', name: 'Ada Lovelace' };
    for (let i = 0; i < 5; i += 1) {
      await page.keyboard.press('Tab');
      const focused = await page.evaluate('({ id: document.activeElement.id, outline: getComputedStyle(document.activeElement).outlineStyle })') as { id: string; outline: string };
      order.push(focused.id);
      expect(focused.outline, `focus on #${focused.id}`).not.toBe('none');
      if (typed[focused.id]) await page.keyboard.type(typed[focused.id]);
    }
    expect(order).toEqual(['number', 'expiry', 'cvc', 'name', 'pay']);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${shop.url}/success?session_id=${session.id}`);
    await page.close();
  });

  it('answers a link that names no session with a 404 page, and every page with its strict policy', async () => {
    const res = await fetch(`${stack.baseUrl}/checkout/cs_01J0000000000000000000000`);
    expect(res.status).toBe(404);
    expect(await res.text()).toContain('Checkout not found');
    const session = await createSession(stack, m, shop);
    const page = await fetch(session.url);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('content-security-policy')).toBe(
      `default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self' ${shop.url}; frame-ancestors 'none'; base-uri 'none'`,
    );
    const css = await fetch(`${stack.baseUrl}/checkout/assets/checkout.css`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
  });
});
