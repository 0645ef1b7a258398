// The checkout scenario (docs/performance.md#scenarios, issue #45): a checkout session's hosted page —
// its time to first byte (ours against a bare server sending the same bytes), the time until a fresh
// browser has a usable card form, and a payment through the form until the customer is sent on to the
// merchant's success_url.

import { once } from 'node:events';
import { Agent, request } from 'undici';
import type { Browser } from 'playwright-core';
import { launchBrowser, openCheckoutPage, payOnPage, type PageLoad } from './checkout-browser';
import { cpuMs, drive, percentile, Repeated, round, summarize } from './measure';
import type { Merchant } from './merchant';
import { log, repeat } from './runs';
import { freePort, launch, type Stack } from './stack';

/** Page requests per TTFB series and side (one series one at a time, one at CONCURRENCY). */
const REQUESTS = Number(process.env.BENCH_CHECKOUT_REQUESTS ?? 100);
const CONCURRENCY = Number(process.env.BENCH_CHECKOUT_CONCURRENCY ?? 8);
/** Fresh pages opened in Chromium per run, each a new session; the first PAYMENTS of them are paid. */
const PAGES = Number(process.env.BENCH_CHECKOUT_PAGES ?? 10);
const PAYMENTS = Number(process.env.BENCH_CHECKOUT_PAYMENTS ?? 3);
/** Each TTFB series alternates its sides in this many slices, the order reversed every other slice. */
const SLICES = 2;

/** Never reached (the bench's browser resolves no name): only asked for, which is the moment measured. */
const SHOP = 'https://shop.example';
const SESSION = {
  line_items: [{ name: 'T-shirt', quantity: 2, unit_amount: 1500 }, { name: 'Socks', quantity: 1, unit_amount: 800 }],
  success_url: `${SHOP}/thanks`,
  cancel_url: `${SHOP}/cart`,
};

/**
 * The hosted page allows one source IP 120 requests a minute (api/checkout-page/hosted-page.ts), a
 * customer's budget. The bench stands in for many customers, so its HTTP client spreads its requests
 * over loopback addresses, 100 to each, each used once: every request is still counted by the limiter.
 */
const PER_ADDRESS = 100;
let addressNo = 0;

function spreadClient() {
  const agents: Agent[] = [];
  return {
    agentFor: (i: number) => {
      const block = Math.floor(i / PER_ADDRESS);
      if (!agents[block]) {
        addressNo += 1;
        agents[block] = new Agent({ localAddress: `127.1.${addressNo >> 8}.${addressNo & 255}`, connections: CONCURRENCY });
      }
      return agents[block];
    },
    close: () => Promise.all(agents.map((agent) => agent.close())),
  };
}

/** GETs `url` and answers the ms until the first byte of its body (the whole body read, the connection kept). */
async function firstByte(url: string, dispatcher: Agent): Promise<number> {
  const t0 = performance.now();
  const res = await request(url, { dispatcher });
  let first = 0;
  res.body.on('data', () => { first ||= performance.now(); });
  await once(res.body, 'end');
  if (res.statusCode !== 200) throw new Error(`checkout: ${url} answered ${res.statusCode}`);
  return first - t0;
}

/** One side of a TTFB comparison: the page URL for the i-th request, and the process that answers it. */
interface Side { urlOf: (i: number) => string; pid: number }

/**
 * Each side's first-byte times for `total` requests at `concurrency`, the sides in turns (SLICES slices,
 * order reversed every other), as the other scenarios compare: p50, p99, pages a second, and the CPU its
 * server spent per page.
 */
async function ttfbInTurns(sides: Side[], total: number, concurrency: number) {
  const totals = sides.map(() => ({ ttfbs: [] as number[], elapsedMs: 0, cpuMs: 0 }));
  const perSlice = Math.ceil(total / SLICES);
  for (let slice = 0; slice < SLICES; slice++) {
    const order = sides.map((_, i) => i);
    if (slice % 2) order.reverse();
    for (const s of order) {
      const spread = spreadClient();
      const before = cpuMs(sides[s].pid);
      const run = await drive(perSlice, concurrency, async (i) => {
        totals[s].ttfbs.push(await firstByte(sides[s].urlOf(slice * perSlice + i), spread.agentFor(i)));
      });
      totals[s].cpuMs += cpuMs(sides[s].pid) - before;
      totals[s].elapsedMs += run.elapsedMs;
      await spread.close();
    }
  }
  return totals.map((t) => ({ ...summarize(t.ttfbs, t.elapsedMs), cpu_us: round((t.cpuMs * 1000) / t.ttfbs.length) }));
}

/** Starts the floor's process serving the bytes and headers of the page at `pageUrl`; its URL and pid. */
async function startFloor(stack: Stack, pageUrl: string) {
  const res = await request(pageUrl);
  const html = await res.body.text();
  if (res.statusCode !== 200 || !html.includes('id="card-form"')) throw new Error(`checkout: ${pageUrl} answered ${res.statusCode} without the card form`);
  const keep = ['content-type', 'content-security-policy', 'cache-control', 'x-content-type-options', 'referrer-policy', 'x-frame-options'];
  const headers = Object.fromEntries(keep.flatMap((name) => (res.headers[name] ? [[name, String(res.headers[name])]] : [])));
  const port = await freePort();
  const proc = await launch('bench/checkout-floor.js', {
    ...stack.env, PORT: String(port), CHECKOUT_FLOOR_HTML: html, CHECKOUT_FLOOR_HEADERS: JSON.stringify(headers),
  }, 'checkout floor listening');
  return { url: `http://127.0.0.1:${port}/`, proc, bytes: Buffer.byteLength(html) };
}

interface Session { id: string; payment_id: string }

/** `count` new sessions through the API with the merchant's secret key; each creation's ms beside them. */
async function createSessions(merchant: Merchant, count: number): Promise<{ sessions: Session[]; createMs: number[] }> {
  const sessions: Session[] = [];
  const createMs: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    sessions.push((await merchant.http.post<Session>('/checkout-sessions', SESSION, merchant.key)).data);
    createMs.push(performance.now() - t0);
  }
  return { sessions, createMs };
}

const p50 = (values: number[]) => round(percentile([...values].sort((a, b) => a - b), 50));

/** Each page opened fresh in Chromium; the first `payments` of them paid with the 4242 card. */
async function inBrowser(browser: Browser, urls: string[], payments: number): Promise<{ loads: PageLoad[]; payMs: number[] }> {
  const loads: PageLoad[] = [];
  const payMs: number[] = [];
  for (const [i, url] of urls.entries()) {
    const open = await openCheckoutPage(browser, url);
    try {
      loads.push(open.load);
      if (i < payments) payMs.push(await payOnPage(open.page, `${SHOP}/thanks`));
    } finally {
      await open.context.close();
    }
  }
  return { loads, payMs };
}

/** Fails unless each of `sessions`' payments succeeded: a redirect to success_url is only given once paid, checked anyway. */
async function expectPaid(merchant: Merchant, sessions: Session[]): Promise<void> {
  for (const session of sessions) {
    const payment = (await merchant.http.get(`/payments/${session.payment_id}`, merchant.key)).data;
    if (payment.status !== 'SUCCEEDED') throw new Error(`checkout: ${session.id}'s payment is ${payment.status} after the page sent the customer on`);
  }
}

/**
 * `checkout`: per run, PAGES new sessions (created through the API, timed); REQUESTS GETs of their
 * pages for the first byte, one at a time and at CONCURRENCY, against the floor; then each page opened
 * fresh in Chromium (time to a usable form) and the first PAYMENTS of them paid through the form. The
 * browser parts are left out, with a warning, on a machine without Chromium.
 */
export async function checkoutScenario(stack: Stack, merchant: Merchant): Promise<Repeated<Record<string, number>>> {
  const sessionCount = Math.max(PAGES, PAYMENTS, 1);
  const pageUrl = (session: Session) => `${stack.api}/checkout/${encodeURIComponent(session.id)}`;
  const warm = await createSessions(merchant, 2);
  const floor = await startFloor(stack, pageUrl(warm.sessions[0]));
  const browser = await launchBrowser();
  if (!browser) log('bench: checkout, no Chromium at CHROMIUM_PATH or /usr/bin/chromium: the page is measured without a browser');
  const unpaid: Session[] = [...warm.sessions];
  try {
    // Both servers and the browser warmed first, untimed: the first requests of a process are its slowest.
    const warmSides: Side[] = [{ urlOf: (i) => pageUrl(warm.sessions[i % 2]), pid: stack.apiProc.pid! }, { urlOf: () => floor.url, pid: floor.proc.pid! }];
    await ttfbInTurns(warmSides, 20, 1);
    if (browser) await inBrowser(browser, warm.sessions.map(pageUrl), 0);

    return await repeat('checkout', async () => {
      const { sessions, createMs } = await createSessions(merchant, sessionCount);
      const ours: Side = { urlOf: (i) => pageUrl(sessions[i % sessions.length]), pid: stack.apiProc.pid! };
      const bare: Side = { urlOf: () => floor.url, pid: floor.proc.pid! };
      const [seq, seqFloor] = await ttfbInTurns([ours, bare], REQUESTS, 1);
      const [conc, concFloor] = await ttfbInTurns([ours, bare], REQUESTS, CONCURRENCY);
      const measured: Record<string, number> = {
        sessions: sessionCount, create_ms: p50(createMs), page_bytes: floor.bytes, requests: REQUESTS, concurrency: CONCURRENCY,
        ttfb_ms: seq.p50_ms, ttfb_p99_ms: seq.p99_ms, floor_ttfb_ms: seqFloor.p50_ms, floor_ttfb_p99_ms: seqFloor.p99_ms,
        concurrent_ttfb_ms: conc.p50_ms, concurrent_ttfb_p99_ms: conc.p99_ms, concurrent_per_s: conc.per_s,
        floor_concurrent_ttfb_ms: concFloor.p50_ms, floor_concurrent_ttfb_p99_ms: concFloor.p99_ms, floor_concurrent_per_s: concFloor.per_s,
        api_cpu_us_per_page: round((seq.cpu_us + conc.cpu_us) / 2), floor_cpu_us_per_page: round((seqFloor.cpu_us + concFloor.cpu_us) / 2),
      };
      const payments = Math.min(PAYMENTS, sessionCount);
      unpaid.push(...(browser ? sessions.slice(payments) : sessions));
      if (!browser) return measured;
      const { loads, payMs } = await inBrowser(browser, sessions.slice(0, PAGES).map(pageUrl), payments);
      await expectPaid(merchant, sessions.slice(0, payments));
      return {
        ...measured, pages: loads.length, payments,
        browser_ttfb_ms: p50(loads.map((l) => l.ttfbMs)), interactive_ms: p50(loads.map((l) => l.interactiveMs)),
        interactive_max_ms: round(Math.max(...loads.map((l) => l.interactiveMs))), loaded_ms: p50(loads.map((l) => l.loadedMs)),
        ...(payMs.length ? { pay_ms: p50(payMs), pay_max_ms: round(Math.max(...payMs)) } : {}),
      };
    });
  } finally {
    await browser?.close();
    floor.proc.kill('SIGTERM');
    // The sessions left open expired, so that a later scenario (memory counts the worker's open
    // workflows) does not find them and their payments waiting.
    await drive(unpaid.length, 4, async (i) => {
      await merchant.http.post(`/checkout-sessions/${unpaid[i].id}/expire`, {}, merchant.key).catch(() => {});
    });
  }
}

type Measured = Repeated<Record<string, number>>;

/**
 * The scenario's rows of the printed table (bench/results.ts), each `[name, median, target, runs]` as
 * its `row` takes them. No target: docs/performance.md sets none for the hosted page yet.
 */
export function checkoutRows(checkout: Measured): [string, string, string, string][] {
  const m = checkout.median;
  const runsOf = (field: string) => checkout.runs.map((r) => r[field]).join(' / ');
  const rows: [string, string, string, string][] = [
    ['checkout ttfb', `p50 ${m.ttfb_ms} ms (p99 ${m.ttfb_p99_ms}) vs floor ${m.floor_ttfb_ms} ms (p99 ${m.floor_ttfb_p99_ms})`, '', runsOf('ttfb_ms')],
    [`checkout c${m.concurrency}`, `p50 ${m.concurrent_ttfb_ms} ms (p99 ${m.concurrent_ttfb_p99_ms}), ${m.concurrent_per_s}/s vs floor ${m.floor_concurrent_ttfb_ms} ms, ${m.floor_concurrent_per_s}/s`, '', runsOf('concurrent_ttfb_ms')],
    ['checkout CPU', `API ${m.api_cpu_us_per_page} µs vs floor ${m.floor_cpu_us_per_page} µs per page; session create p50 ${m.create_ms} ms`, '', runsOf('api_cpu_us_per_page')],
  ];
  if (m.interactive_ms !== undefined) rows.push(['checkout form', `usable in p50 ${m.interactive_ms} ms (first byte ${m.browser_ttfb_ms}, loaded ${m.loaded_ms}; ${m.pages} fresh pages)`, '', runsOf('interactive_ms')]);
  if (m.pay_ms !== undefined) rows.push(['checkout pay', `Pay to success_url p50 ${m.pay_ms} ms (max ${m.pay_max_ms}; ${m.payments} payments)`, '', runsOf('pay_ms')]);
  return rows;
}
