// The checkout scenario's browser side (bench/checkout.ts): the hosted page opened and paid in headless
// Chromium through playwright-core, as a customer's first visit. The Debian package's Chromium
// (CHROMIUM_PATH, default /usr/bin/chromium, as the tests use); never a downloaded browser.

import { existsSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The test card that the sandbox processor approves at once. */
const VISA = '4242 4242 4242 4242';

/** Headless Chromium, or nothing on a machine without one (the scenario then measures without a browser). */
export async function launchBrowser(): Promise<Browser | undefined> {
  if (!existsSync(CHROMIUM)) return undefined;
  // Loaded only here: the rest of the bench runs without playwright-core.
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    // No name resolves but the stack's address: the merchant's success_url (https://shop.example) is only ever requested, never
    // reached, so the bench's browser touches nothing outside this machine.
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--no-first-run', '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'],
  });
}

/** A page load as the browser timed it (Navigation Timing, ms from the navigation's start). */
export interface PageLoad {
  /** The first byte of the page's answer. */
  ttfbMs: number;
  /** DOMContentLoaded over: the form parsed and the deferred checkout.js run (the form is usable and guarded). */
  interactiveMs: number;
  /** The load event over: the stylesheet applied too. */
  loadedMs: number;
}

/** An open page in a context of its own, and how it loaded. */
export interface OpenPage { page: Page; context: BrowserContext; load: PageLoad }

/**
 * Opens `url` in a fresh context: no cache, no cookies, no open connection, as a customer's first
 * visit from the merchant's shop. Fails unless it is the session's form with its Pay button enabled.
 */
export async function openCheckoutPage(browser: Browser, url: string): Promise<OpenPage> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const response = await page.goto(url, { waitUntil: 'load' });
  if (response?.status() !== 200) {
    await context.close();
    // A 429 is the page's per-IP budget (120 a minute): every page the browser opens comes from 127.0.0.1.
    throw new Error(`checkout: ${url} answered ${response?.status()} in Chromium (fewer BENCH_CHECKOUT_PAGES if 429)`);
  }
  if (!await page.locator('#pay').isEnabled()) throw new Error(`checkout: ${url} has no enabled Pay button`);
  // A string, not a function: the bench compiles without the DOM's types.
  const timing = await page.evaluate('JSON.stringify(performance.getEntriesByType("navigation")[0])') as string;
  const nav = JSON.parse(timing) as { responseStart: number; domContentLoadedEventEnd: number; loadEventEnd: number };
  return { page, context, load: { ttfbMs: nav.responseStart, interactiveMs: nav.domContentLoadedEventEnd, loadedMs: nav.loadEventEnd } };
}

/**
 * Types the 4242 card into the open form as a customer would, presses Pay, and answers the ms from the
 * press until the browser asks for the merchant's success page (`successPrefix`): the page's POST, the
 * payment confirmed at the processor, and the 303 that sends the customer on.
 */
export async function payOnPage(page: Page, successPrefix: string): Promise<number> {
  await page.getByLabel('Card number').fill(VISA);
  await page.getByLabel('Expiry (MM / YY)').fill(`12 / ${String((new Date().getFullYear() + 2) % 100).padStart(2, '0')}`);
  await page.getByLabel('CVC').fill('123');
  const reached = page.waitForRequest((request) => request.url().startsWith(successPrefix), { timeout: 30_000 });
  const t0 = performance.now();
  await page.locator('#pay').click();
  await reached;
  return performance.now() - t0;
}
