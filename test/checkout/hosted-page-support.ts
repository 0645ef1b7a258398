import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { Frame, FrameLocator, Page } from 'playwright-core';
import { bearer, sandboxMerchant, type Merchant, type TestStack } from '../support/stack';
import { addFees, createConfig, createProvider } from '../support/routing';

// What the hosted page's and the card fields' browser tests share: Chromium, a merchant that can take
// payments through the sandbox processor, its checkout sessions, and the merchant's own shop pages.

// Chromium itself lives in test/support/chromium.ts; re-exported so the checkout tests keep one import.
export { CHROMIUM, HAS_CHROMIUM, launchChromium } from '../support/chromium';

export const CARDS = {
  visa: '4242424242424242',
  declined: '4000000000000002',
  insufficientFunds: '4000000000009995',
  /** Challenged by 3-D Secure, then approved once the cardholder completes it. */
  threeDSecure: '4000002760003184',
} as const;

/**
 * A sandbox account (http URLs allowed, as a local shop has) with one sandbox-processor provider config
 * and its fees: what a checkout session's payment is routed to.
 */
export async function checkoutMerchant(stack: TestStack): Promise<Merchant> {
  const m = await sandboxMerchant(stack);
  const provider = await createProvider(stack, { sandbox: true });
  const config = await createConfig(stack, m, provider.id, { credentials: { api_key: 'sim_checkout_key_0001' } });
  await addFees(stack, m, config, provider, 2.9);
  return m;
}

/** The merchant's shop, on another origin than Switchboard's: it answers every path with a small page and remembers each visit. */
export interface Shop { url: string; visits: string[]; close(): Promise<void> }

export async function startShop(): Promise<Shop> {
  const visits: string[] = [];
  const server: Server = createServer((req, res) => {
    visits.push(req.url ?? '/');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>Shop</title><h1 id="shop-page">${new URL(req.url ?? '/', 'http://shop').pathname}</h1>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    visits,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** A checkout session of `m` (secret key) that returns to `shop`: two T-shirts at $15.00 unless `body` says otherwise. */
export async function createSession(stack: TestStack, m: Merchant, shop: Shop, body: Record<string, unknown> = {}) {
  const res = await stack.http.post('/v1/checkout-sessions').set(bearer(m.secretKey)).send({
    line_items: [{ name: 'T-shirt', quantity: 2, unit_amount: 1500 }],
    success_url: `${shop.url}/success`,
    cancel_url: `${shop.url}/cart`,
    ...body,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data as { id: string; url: string; payment_id: string; client_secret: string; status: string };
}

export async function getSession(stack: TestStack, m: Merchant, id: string) {
  const res = await stack.http.get(`/v1/checkout-sessions/${id}`).set(bearer(m.secretKey));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

/** An expiry two years ahead, as the form takes it. */
export function futureExpiry(): string {
  return `12 / ${String((new Date().getFullYear() + 2) % 100).padStart(2, '0')}`;
}

/** Types a card into the fields by their labels (the hosted page's, or the card fields' frame). */
export async function fillCard(target: Page | Frame | FrameLocator, number: string, options: { cvc?: string; name?: string; expiry?: string } = {}) {
  await target.getByLabel('Card number').fill(number.replace(/(\d{4})(?=\d)/g, '$1 '));
  await target.getByLabel('Expiry (MM / YY)').fill(options.expiry ?? futureExpiry());
  await target.getByLabel('CVC').fill(options.cvc ?? '123');
  if (options.name) await target.getByLabel('Name on card').fill(options.name);
}

/** Every Content-Security-Policy violation the page reports on its console. */
export function cspViolations(page: Page): string[] {
  const violations: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  return violations;
}
