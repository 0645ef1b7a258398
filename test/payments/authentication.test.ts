import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { card, confirm, createPayment, getPayment, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually } from '../support/worker-process';
import { paymentWorkflowId } from '../../contracts/payments';
import { flatten } from '../support/history';
import { HAS_CHROMIUM, launchChromium } from '../support/chromium';
import { processingSince } from '../../db/payments';

// 3-D Secure end to end (docs/authentication.md): the real API, Postgres and Temporal, the sandbox
// processor's challenge page and its signed notifications. The customer's browser is played by HTTP
// requests (and, once, by Chromium clicking through the page).

const CARDS_3DS = { always: '4000002760003184', thenDeclined: '4000008400001629', supported: '4000000000003055', stepUp: '4000002500003155' } as const;
const RETURN_URL = 'https://shop.example.test/checkout/done';

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let f: PaymentsFixture;
let soft: PaymentsFixture;

const simPost = (path: string, body: unknown) => fetch(`${sim.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const holdNotifications = (hold: boolean) => simPost('/_inspect/notifications/hold', { hold });
const releaseNotifications = (options: { duplicate?: boolean; reverse?: boolean } = {}) => simPost('/_inspect/notifications/release', options);

/** The customer answers the challenge page (as its form does); the answer is where the browser goes next. */
async function answerChallenge(url: string, action: 'approve' | 'fail'): Promise<string | null> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `action=${action}`, redirect: 'manual' });
  expect([200, 303]).toContain(res.status);
  return res.headers.get('location');
}

/** The browser follows the processor's redirect to our return endpoint; our answer sends it on. */
async function followReturn(location: string) {
  expect(location.startsWith(`${stack.baseUrl}/v1/payments/`)).toBe(true);
  const res = await fetch(location, { redirect: 'manual' });
  return { status: res.status, location: res.headers.get('location'), text: await res.text() };
}

async function requiringAction(m = f, number: string = CARDS_3DS.always, create: Record<string, unknown> = {}, returnUrl: string | null = RETURN_URL) {
  const created = await createPayment(stack, m.merchant, { amount: 4200, ...create });
  const res = await confirm(stack, m.merchant, created.body.data.id, { payment_method: card(number), ...(returnUrl ? { return_url: returnUrl } : {}) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.data.status).toBe('REQUIRES_ACTION');
  expect(res.body.data.next_action).toMatchObject({ type: 'redirect_to_url', redirect_to_url: { return_url: returnUrl ?? null } });
  return { id: created.body.data.id as string, url: res.body.data.next_action.redirect_to_url.url as string };
}

const settled = (m: PaymentsFixture, id: string) => eventually(async () => {
  const p = await getPayment(stack, m.merchant, id);
  return p.status !== 'REQUIRES_ACTION' && p.status !== 'PROCESSING' ? p : undefined;
}, 30_000, 100);

beforeEach(async () => {
  await holdNotifications(false);
});

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '2000', AUTHENTICATION_TIMEOUT: '4s' });
  worker = await startWorker(stack);
  f = await paymentsFixture(stack);
  // The primary config declines softly once the cardholder has authenticated: the backup takes what follows.
  soft = await paymentsFixture(stack, { primary: { decline_after_authentication: 'issuer_unavailable' } });
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

describe('a payment that requires authentication', () => {
  it('waits in REQUIRES_ACTION, then succeeds once the customer completes the challenge (notification first)', async () => {
    const { id, url } = await requiringAction();
    const waiting = await getPayment(stack, f.merchant, id);
    expect(waiting.charges.map((c: any) => c.status)).toEqual(['REQUIRES_ACTION']);
    expect(waiting.events.map((e: any) => e.event)).toContain('payment_intent.requires_action');
    expect(waiting.next_action.since).toBeTruthy();
    const page = await (await fetch(url)).text();
    expect(page).toContain('id="complete"');
    expect(page).toContain('id="fail"');

    const back = await answerChallenge(url, 'approve');
    const done = await settled(f, id);
    expect(done).toMatchObject({ status: 'SUCCEEDED', next_action: null, amount_received: 4200 });
    expect(done.charges.map((c: any) => c.status)).toEqual(['CAPTURED']);
    // The customer's return after the notification changed nothing; it lands on the shop with the payment.
    const landed = await followReturn(back!);
    expect(landed.status).toBe(303);
    const target = new URL(landed.location!);
    expect(`${target.origin}${target.pathname}`).toBe(RETURN_URL);
    expect(Object.fromEntries(target.searchParams)).toMatchObject({ payment_intent: id, redirect_status: 'succeeded' });
  });

  it('completes on the customer\'s return when the notification has not come (return first), then applies the late notification once', async () => {
    await holdNotifications(true);
    const { id, url } = await requiringAction(f, CARDS_3DS.always, { auto_capture: false });
    const back = await answerChallenge(url, 'approve');
    const landed = await followReturn(back!);
    expect(landed.status).toBe(303);
    expect(new URL(landed.location!).searchParams.get('redirect_status')).toBe('succeeded');
    const p = await getPayment(stack, f.merchant, id);
    expect(p.status).toBe('AUTHORIZED');
    await releaseNotifications({ duplicate: true });
    await holdNotifications(false);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const after = await getPayment(stack, f.merchant, id);
    expect(after.status).toBe('AUTHORIZED');
    expect(after.charges).toHaveLength(1);
    expect(after.events.filter((e: any) => e.event === 'payment_intent.amount_capturable_updated')).toHaveLength(1);
  });

  it('fails with authentication_failed when the customer fails the challenge: a hard stop, the backup never tried', async () => {
    const { id, url } = await requiringAction();
    await answerChallenge(url, 'fail');
    const done = await settled(f, id);
    expect(done.status).toBe('FAILED');
    expect(done.last_error).toMatchObject({ code: 'authentication_failed', decline_code: 'authentication_failed' });
    expect(done.charges.map((c: any) => [c.status, c.decline_code, c.payment_provider_config_id])).toEqual([['DECLINED', 'authentication_failed', f.primary.id]]);
    expect(done.events.map((e: any) => e.event)).toContain('payment_intent.payment_failed');
  });

  it('declines card_declined after a completed challenge (4000008400001629)', async () => {
    const { id, url } = await requiringAction(f, CARDS_3DS.thenDeclined);
    await answerChallenge(url, 'approve');
    const done = await settled(f, id);
    expect(done.charges[0]).toMatchObject({ decline_code: 'card_declined' });
  });

  it('approves a card that supports 3-D Secure without asking (4000000000003055)', async () => {
    const created = await createPayment(stack, f.merchant, { amount: 1000 });
    const res = await confirm(stack, f.merchant, created.body.data.id, { payment_method: card(CARDS_3DS.supported), return_url: RETURN_URL });
    expect(res.body.data).toMatchObject({ status: 'SUCCEEDED', next_action: null });
  });

  it('steps up: authentication_required is retried once on the same config with 3-D Secure requested (4000002500003155)', async () => {
    const { id, url } = await requiringAction(f, CARDS_3DS.stepUp);
    const waiting = await getPayment(stack, f.merchant, id);
    expect(waiting.charges.map((c: any) => [c.attempt_no, c.status, c.decline_code, c.payment_provider_config_id])).toEqual([
      [1, 'FAILED', 'authentication_required', f.primary.id],
      [2, 'REQUIRES_ACTION', null, f.primary.id],
    ]);
    await answerChallenge(url, 'approve');
    const done = await settled(f, id);
    expect(done.status).toBe('SUCCEEDED');
    expect(done.events.map((e: any) => e.event)).not.toContain('payment_intent.payment_failed');
  });

  it('works without a return_url: the last page says the payment is complete', async () => {
    const { id, url } = await requiringAction(f, CARDS_3DS.always, {}, null);
    const back = await answerChallenge(url, 'approve');
    if (back) {
      const landed = await followReturn(back);
      expect(landed.status).toBe(200);
      expect(landed.text).toContain('complete');
    }
    expect((await settled(f, id)).status).toBe('SUCCEEDED');
  });

  it('refuses a return_url that is not absolute https in live (400 at body/return_url)', async () => {
    const created = await createPayment(stack, f.merchant, { amount: 1000 });
    for (const bad of ['http://shop.example.test/done', '/relative', 'javascript:alert(1)']) {
      const res = await confirm(stack, f.merchant, created.body.data.id, { payment_method: card(CARDS_3DS.always), return_url: bad });
      expect(res.status, bad).toBe(400);
      expect(res.body.error.details.fields.map((x: any) => x.path)).toContain('body/return_url');
    }
  });
});

describe('while the customer authenticates', () => {
  it('fails with authentication_timeout after AUTHENTICATION_TIMEOUT, voids at the processor, and may be confirmed again', async () => {
    const { id, url } = await requiringAction();
    const done = await eventually(async () => {
      const p = await getPayment(stack, f.merchant, id);
      return p.status === 'FAILED' ? p : undefined;
    }, 20_000, 200);
    expect(done.last_error).toMatchObject({ code: 'authentication_timeout' });
    expect(done.charges[0]).toMatchObject({ status: 'DECLINED', decline_code: 'authentication_timeout' });
    // A late answer on the challenge page authorizes nothing.
    await answerChallenge(url, 'approve').catch(() => null);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await getPayment(stack, f.merchant, id)).status).toBe('FAILED');
    const again = await confirm(stack, f.merchant, id, { payment_method: card(CARDS_3DS.supported) });
    expect(again.body.data.status).toBe('SUCCEEDED');
  });

  it('can be canceled: CANCELED, the charge voided, and the challenge page no longer approves', async () => {
    const { id, url } = await requiringAction();
    const res = await stack.http.post(`/v1/payments/${id}/cancel`).set(bearer(f.merchant.secretKey)).send({});
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.status).toBe('CANCELED');
    await answerChallenge(url, 'approve').catch(() => null);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const p = await getPayment(stack, f.merchant, id);
    expect(p.status).toBe('CANCELED');
    expect(p.charges[0].status).toBe('FAILED');
  });

  it('takes no other command (409) while waiting', async () => {
    const { id } = await requiringAction();
    const capture = await stack.http.post(`/v1/payments/${id}/capture`).set(bearer(f.merchant.secretKey)).send({});
    expect(capture.status).toBe(409);
    const again = await confirm(stack, f.merchant, id, { payment_method: card(CARDS_3DS.supported) });
    expect(again.status).toBe(409);
  });

  it('survives its worker: a new worker completes the payment the old one was waiting on', async () => {
    const { id, url } = await requiringAction();
    await worker.stop();
    await answerChallenge(url, 'approve');
    worker = await startWorker(stack);
    const done = await settled(f, id);
    expect(done.status).toBe('SUCCEEDED');
    const client = await stack.deps.temporal();
    const history = flatten(await client.workflow.getHandle(paymentWorkflowId(id)).fetchHistory()).join('\n');
    expect(history).not.toContain('cavv');
  });

  it('is found by PaymentStatus="REQUIRES_ACTION", says so in the Temporal UI\'s current details, and is not stuck', async () => {
    const { id } = await requiringAction();
    const client = await stack.deps.temporal();
    const found = await eventually(async () => {
      for await (const w of client.workflow.list({ query: `PaymentId = "${id}" AND PaymentStatus = "REQUIRES_ACTION"` })) return w;
      return undefined;
    }, 15_000, 250);
    expect(found.workflowId).toBe(paymentWorkflowId(id));
    const metadata = await client.workflow.getHandle(paymentWorkflowId(id)).query<{ currentDetails: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toMatch(/waiting for customer authentication \(since \d{4}-\d\d-\d\dT/);
    const query = await client.workflow.getHandle(paymentWorkflowId(id)).query('state') as any;
    expect(query.authentication.chargeId).toMatch(/^ch_/);
    // The stuck-payment watchdog's look: a payment waiting for its customer is not stuck.
    const stuck = await processingSince(stack.db, 'production', new Date(Date.now() + 3_600_000), 1000);
    expect(stuck.map((p) => p.id)).not.toContain(id);
  });
});

describe('no second challenge', () => {
  it('passes the authentication on when the first candidate declines softly after it: the backup approves without a challenge', async () => {
    const { id, url } = await requiringAction(soft);
    await answerChallenge(url, 'approve');
    const done = await settled(soft, id);
    expect(done.status).toBe('SUCCEEDED');
    expect(done.charges.map((c: any) => [c.status, c.payment_provider_config_id])).toEqual([
      ['FAILED', soft.primary.id],
      ['CAPTURED', soft.backup.id],
    ]);
    const challenges = await (await fetch(`${sim.url}/_inspect/challenges`)).json() as any;
    expect(challenges.challenges.filter((c: any) => done.charges.some((ch: any) => ch.provider_reference === c.charge_id))).toHaveLength(1);
    expect(JSON.stringify(done)).not.toContain('cavv');
  });
});

describe.skipIf(!HAS_CHROMIUM)('in a real browser', () => {
  let browser: Browser;
  afterAll(async () => { await browser?.close(); });

  it('clicks through the challenge page and lands on the shop with the payment id', async () => {
    browser = await launchChromium();
    const page = await browser.newPage();
    let landed: string | undefined;
    await page.route('https://shop.example.test/**', (route) => {
      landed = route.request().url();
      return route.fulfill({ status: 200, contentType: 'text/html', body: '<h1>Thanks</h1>' });
    });
    const { id, url } = await requiringAction();
    await page.goto(url);
    await page.click('#complete');
    await page.waitForURL(/shop\.example\.test/);
    expect(landed).toContain(`payment_intent=${id}`);
    expect((await settled(f, id)).status).toBe('SUCCEEDED');
  });
});
