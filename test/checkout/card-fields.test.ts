import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { bearer, type Merchant, type RunningWorker, startStack, startWorker, type TestStack } from '../support/stack';
import { startSimulator, type TestSimulator } from '../support/payments';
import { CARDS, checkoutMerchant, fillCard, HAS_CHROMIUM, launchChromium } from './hosted-page-support';

// The card fields (`/js/v1/switchboard.js`) on a merchant's own page, served from another origin than
// Switchboard's, in headless Chromium against the real stack: the page and the merchant's server never
// see the card number, and get back only the payment as a publishable key sees it.

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let browser: Browser;
let m: Merchant;
let shop: Shop;

interface Shop { url: string; server: Server; seen: string[]; clientSecret: string }

/** The merchant's site: its checkout page is the ten-line integration of docs/checkout.md. */
async function startShop(apiUrl: string, publishableKey: string): Promise<Shop> {
  const shop = { url: '', seen: [] as string[], clientSecret: '' } as Shop;
  const read = async (req: IncomingMessage) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    return body;
  };
  shop.server = createServer(async (req, res) => {
    shop.seen.push(`${req.method} ${req.url} ${await read(req)}`);
    const path = new URL(req.url ?? '/', 'http://shop').pathname;
    const html = path === '/checkout' ? `<!doctype html><html><head><title>Shop</title>
<script src="${apiUrl}/js/v1/switchboard.js"></script></head><body>
<div id="card"></div><button id="pay">Pay</button><pre id="result"></pre>
<script>
  const sb = Switchboard(${JSON.stringify(publishableKey)});
  const card = sb.mountCard('#card');
  document.getElementById('pay').addEventListener('click', async () => {
    const { payment, error } = await sb.confirmCardPayment(${JSON.stringify(shop.clientSecret)}, { card, return_url: location.origin + '/done' });
    document.getElementById('result').textContent = JSON.stringify({ payment, error });
  });
</script></body></html>`
      : path === '/forged' ? `<!doctype html><html><body><script>
  window.messages = [];
  addEventListener('message', (event) => window.messages.push(event.data));
  const frame = document.createElement('iframe');
  frame.src = ${JSON.stringify(`${apiUrl}/js/v1/card-frame.html#${encodeURIComponent('https://pretend.example')}`)};
  frame.onload = () => { window.loaded = true; };
  document.body.appendChild(frame);
</script></body></html>`
        : `<!doctype html><title>Done</title><h1>${path}</h1>`;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html);
  });
  await new Promise<void>((resolve) => shop.server.listen(0, '127.0.0.1', resolve));
  shop.url = `http://127.0.0.1:${(shop.server.address() as AddressInfo).port}`;
  return shop;
}

/** A new payment of `m`, made by its server with the secret key; its client_secret goes into the shop's page. */
async function newPayment(amount = 2500): Promise<string> {
  const res = await stack.http.post('/v1/payments').set(bearer(m.secretKey)).send({ amount, currency: 'USD' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body.data.client_secret).toMatch(new RegExp(`^${res.body.data.id}_secret_`));
  shop.clientSecret = res.body.data.client_secret;
  return res.body.data.id;
}

async function openShop(): Promise<{ page: Page; requests: { url: string; body: string; frame: string }[] }> {
  const page = await browser.newPage();
  const requests: { url: string; body: string; frame: string }[] = [];
  page.on('request', (r) => requests.push({ url: r.url(), body: r.postData() ?? '', frame: r.frame().url() }));
  await page.goto(`${shop.url}/checkout`);
  await page.frameLocator('iframe').getByLabel('Card number').waitFor();
  return { page, requests };
}

async function pay(page: Page): Promise<{ payment?: any; error?: { code: string; message: string } }> {
  await page.locator('#result').evaluate((el) => { el.textContent = ''; });
  await page.click('#pay');
  await page.waitForFunction('document.getElementById("result").textContent !== ""', undefined, { timeout: 30_000 });
  return JSON.parse((await page.locator('#result').textContent())!);
}

describe.skipIf(!HAS_CHROMIUM)('the card fields on a merchant\'s own page', () => {
  beforeAll(async () => {
    sim = await startSimulator();
    stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '2000' });
    worker = await startWorker(stack);
    m = await checkoutMerchant(stack);
    shop = await startShop(stack.baseUrl, m.publishableKey);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    shop?.server.close();
    await worker?.stop();
    await stack?.close();
    await sim?.close();
  });

  it('pays from the frame: the card goes to Switchboard only, the page gets the checkout view of the payment', async () => {
    const id = await newPayment();
    expect(new URL(shop.url).origin).not.toBe(new URL(stack.baseUrl).origin);
    const { page, requests } = await openShop();
    await fillCard(page.frameLocator('iframe'), CARDS.visa, { name: 'Ada Lovelace' });
    const { payment, error } = await pay(page);
    expect(error).toBeUndefined();
    expect(payment).toMatchObject({ object: 'payment', id, status: 'SUCCEEDED', amount: 2500, card: { last4: '4242' } });
    expect(Object.keys(payment).sort()).toEqual(['amount', 'card', 'currency', 'id', 'last_error', 'next_action', 'object', 'status']);

    const withCard = requests.filter((r) => r.body.includes(CARDS.visa) || r.url.includes(CARDS.visa));
    expect(withCard.map((r) => [r.url, r.frame.split('#')[0]])).toEqual([[`${stack.baseUrl}/v1/payments/${id}/confirm`, `${stack.baseUrl}/js/v1/card-frame.html`]]);
    expect(JSON.parse(withCard[0].body)).toMatchObject({ client_secret: shop.clientSecret, payment_method: { type: 'CARD', card: { number: CARDS.visa, holder_name: 'Ada Lovelace' } } });
    expect(shop.seen.join('\n')).not.toContain(CARDS.visa);
    // Paid: the fields take no more typing.
    expect(await page.frameLocator('iframe').getByLabel('Card number').isDisabled()).toBe(true);
    await page.close();
  });

  it('answers a decline with a generic error, and pays the same payment with another card', async () => {
    const id = await newPayment();
    const { page } = await openShop();
    for (const declined of [CARDS.declined, CARDS.insufficientFunds]) {
      await fillCard(page.frameLocator('iframe'), declined);
      const { payment, error } = await pay(page);
      expect(error).toEqual({ code: 'card_declined', message: 'Your card was declined.' });
      expect(payment).toMatchObject({ id, status: 'FAILED', last_error: { code: 'card_declined', decline_code: 'generic_decline' } });
    }
    await fillCard(page.frameLocator('iframe'), CARDS.visa);
    expect((await pay(page)).payment.status).toBe('SUCCEEDED');
    await page.close();
  });

  it('checks the card in the frame before anything is sent', async () => {
    await newPayment();
    const { page, requests } = await openShop();
    const frame = page.frameLocator('iframe');
    await fillCard(frame, '4242424242424241');
    const sent = requests.length;
    const { error } = await pay(page);
    expect(error).toEqual({ code: 'invalid_card', message: 'Enter a valid card number.' });
    expect(await frame.locator('#number-error').textContent()).toBe('Enter a valid card number.');
    expect(requests.slice(sent).filter((r) => r.url.includes('/confirm'))).toEqual([]);
    await page.close();
  });

  it('sends the top window through 3-D Secure and back to return_url', async () => {
    const id = await newPayment();
    const { page } = await openShop();
    await fillCard(page.frameLocator('iframe'), CARDS.threeDSecure);
    await page.click('#pay');
    await page.waitForURL(`${sim.url}/challenge/**`);
    await page.click('#complete');
    await page.waitForURL(`${shop.url}/done?**`);
    const back = new URL(page.url());
    expect(back.searchParams.get('payment_intent')).toBe(id);
    expect(back.searchParams.get('redirect_status')).toBe('succeeded');
    await page.close();
  });

  it('talks to no page but the one it was mounted for', async () => {
    const page = await browser.newPage();
    await page.goto(`${shop.url}/forged`);
    await page.waitForFunction('window.loaded === true');
    await page.waitForTimeout(500);
    expect(await page.evaluate('window.messages')).toEqual([]);
    await page.close();
  });

  it('refuses a secret key in the browser', async () => {
    const page = await browser.newPage();
    await page.goto(`${shop.url}/checkout`);
    const thrown = await page.evaluate(`(() => { try { Switchboard(${JSON.stringify(m.secretKey)}); return ''; } catch (err) { return String(err); } })()`);
    expect(thrown).toContain('publishable key');
    await page.close();
  });

  it('serves the script for any page to load and cache, and the frame for any page to embed', async () => {
    const script = await fetch(`${stack.baseUrl}/js/v1/switchboard.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(script.headers.get('cache-control')).toBe('public, max-age=86400');
    expect(script.headers.get('access-control-allow-origin')).toBe('*');
    const etag = script.headers.get('etag')!;
    // (fetch() would add Cache-Control: no-cache to a conditional request: supertest asks as a browser's cache does.)
    expect((await stack.http.get('/js/v1/switchboard.js').set('If-None-Match', etag)).status).toBe(304);

    const frame = await fetch(`${stack.baseUrl}/js/v1/card-frame.html`);
    expect(frame.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors *",
    );
    expect(frame.headers.get('x-frame-options')).toBeNull();
    const html = await frame.text();
    const scriptUrl = /src="([^"]+)"/.exec(html)![1];
    expect(scriptUrl).toMatch(/^\/js\/v1\/card-frame\.js\?v=[0-9a-f]{12}$/);
    expect((await fetch(`${stack.baseUrl}${scriptUrl}`)).headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
  });
});
