import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { card, confirm, createPayment, getPayment, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { newId } from '../../lib/ids';
import { paymentUpdates, paymentWorkflowId } from '../../contracts/payments';

// docs/security.md §17: the customer's return from 3-D Secure goes where the merchant said, once. The
// browser is played by HTTP requests; the sandbox processor's challenge page is answered by its form.

const CARDS_3DS = { always: '4000002760003184', stepUp: '4000002500003155' } as const;
const RETURN_URL = 'https://shop.example.test/checkout/done';
const PER_PAYMENT = 5;
const PER_IP = 40;

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let f: PaymentsFixture;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({
    SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '2000',
    AUTHENTICATION_RETURN_PAYMENT_PER_MINUTE: String(PER_PAYMENT), AUTHENTICATION_RETURN_IP_PER_MINUTE: String(PER_IP),
  });
  worker = await startWorker(stack);
  f = await paymentsFixture(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

/** The customer answers the challenge page; the answer is where the processor sends the browser next (our return). */
async function answerChallenge(url: string): Promise<string> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'action=approve', redirect: 'manual' });
  const location = res.headers.get('location');
  expect(location?.startsWith(`${stack.baseUrl}/v1/payments/`)).toBe(true);
  return location!;
}

async function hit(location: string) {
  const res = await fetch(location, { redirect: 'manual' });
  return { status: res.status, location: res.headers.get('location'), retryAfter: res.headers.get('retry-after'), text: await res.text() };
}

async function requiringAction(m = f, number: string = CARDS_3DS.always, returnUrl = RETURN_URL) {
  const created = await createPayment(stack, m.merchant, { amount: 4200 });
  const res = await confirm(stack, m.merchant, created.body.data.id, { payment_method: card(number), return_url: returnUrl });
  expect(res.body.data.status, JSON.stringify(res.body)).toBe('REQUIRES_ACTION');
  return { id: created.body.data.id as string, url: res.body.data.next_action.redirect_to_url.url as string, chargeId: res.body.data.next_action.charge_id as string | undefined };
}

const returnLink = (paymentId: string, chargeId: string) => `${stack.baseUrl}/v1/payments/${paymentId}/authentication-return?charge=${chargeId}`;

const setHosts = (m: PaymentsFixture, hosts: string[]) =>
  stack.http.put(`/v1/accounts/${m.merchant.account.id}/settings/return_url_hosts`).set(bearer(m.merchant.secretKey)).send({ hosts });

describe('the customer\'s return from 3-D Secure', () => {
  it('redirects to the return_url once; a refresh sees the page, not a redirect', async () => {
    const { id, url } = await requiringAction();
    const back = await answerChallenge(url);
    const first = await hit(back);
    expect(first.status).toBe(303);
    expect(new URL(first.location!).searchParams.get('payment_intent')).toBe(id);
    const again = await hit(back);
    expect(again.status).toBe(200);
    expect(again.location).toBeNull();
    expect(again.text).toContain('Payment complete');
  });

  it('never redirects for a charge that asked for no authentication (the route is no open redirect)', async () => {
    // A card tester confirms its own payment with a frictionless card and a return_url of its choosing.
    const created = await createPayment(stack, f.merchant, { amount: 4200 });
    const res = await confirm(stack, f.merchant, created.body.data.id, { payment_method: card('4242424242424242'), return_url: 'https://phish.example.test/' });
    expect(res.body.data.status, JSON.stringify(res.body)).toBe('SUCCEEDED');
    const [charge] = (await getPayment(stack, f.merchant, created.body.data.id)).charges as { id: string }[];
    const visit = await hit(returnLink(created.body.data.id, charge.id));
    expect(visit.status).toBe(200);
    expect(visit.location).toBeNull();
    expect(visit.text).toContain('Payment complete');
  });

  it('shows the page, never a redirect, for a charge the payment no longer waits on', async () => {
    // Step-up: the first charge was declined for authentication_required, the second waits.
    const { id, url } = await requiringAction(f, CARDS_3DS.stepUp);
    const charges = (await getPayment(stack, f.merchant, id)).charges as { id: string; attempt_no: number }[];
    const older = charges.find((c) => c.attempt_no === 1)!;
    const stale = await hit(returnLink(id, older.id));
    expect(stale.status).toBe(200);
    expect(stale.location).toBeNull();
    const landed = await hit(await answerChallenge(url));
    expect(landed.status).toBe(303);
  });

  it('is refused by the workflow for a charge that does not wait, and answered at once for the one that does', async () => {
    const { id } = await requiringAction();
    const waiting = (await getPayment(stack, f.merchant, id)).charges[0].id as string;
    const handle = (await stack.deps.temporal()).workflow.getHandle(paymentWorkflowId(id));
    await expect(handle.executeUpdate(paymentUpdates.authenticationReturn, { args: [{ chargeId: newId('ch') }] })).rejects.toThrow(WorkflowUpdateFailedError);
    // The customer has not answered the challenge: the update answers at once all the same, and the payment still waits.
    const started = Date.now();
    expect(await handle.executeUpdate(paymentUpdates.authenticationReturn, { args: [{ chargeId: waiting }] })).toMatchObject({ status: 'REQUIRES_ACTION' });
    expect(Date.now() - started).toBeLessThan(3000);
    expect((await getPayment(stack, f.merchant, id)).status).toBe('REQUIRES_ACTION');
  });
});

describe('an account\'s return_url_hosts', () => {
  it('are set by an OWNER or ADMIN only: a key with routing and payment rights cannot lift them', async () => {
    const m = await paymentsFixture(stack);
    const key = await stack.http.post(`/v1/api-keys?account_id=${m.merchant.account.id}`).set(bearer(m.merchant.token))
      .send({ name: 'developer-like', permissions: { routing: ['read', 'write'], payment: ['read', 'create', 'confirm'] } });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    const refused = await stack.http.put(`/v1/accounts/${m.merchant.account.id}/settings/return_url_hosts`).set(bearer(key.body.data.key)).send({ hosts: [] });
    expect(refused.status).toBe(403);
    expect(refused.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'account:settings:write' });
    expect((await setHosts(m, [])).status).toBe(200);
  });

  it('refuses a return_url on any other host at create and confirm (400 at body/return_url), and takes the listed ones', async () => {
    const m = await paymentsFixture(stack);
    const set = await setHosts(m, ['shop.example.test', '*.allowed.test']);
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.data).toMatchObject({ key: 'return_url_hosts', value: JSON.stringify(['shop.example.test', '*.allowed.test']) });
    const created = await createPayment(stack, m.merchant, { amount: 1000 });
    for (const bad of ['https://evil.test/done', 'https://allowed.test/done', 'https://shop.example.test.evil.test/done']) {
      const res = await confirm(stack, m.merchant, created.body.data.id, { payment_method: card(CARDS_3DS.always), return_url: bad });
      expect(res.status, bad).toBe(400);
      expect(res.body.error.details.fields.map((x: any) => x.path)).toEqual(['body/return_url']);
    }
    const inOne = await createPayment(stack, m.merchant, { amount: 1000, confirm: true, payment_method: card(CARDS_3DS.always), return_url: 'https://evil.test/done' });
    expect(inOne.status).toBe(400);
    expect(inOne.body.error.details.fields.map((x: any) => x.path)).toEqual(['body/return_url']);
    for (const good of [RETURN_URL, 'https://pay.allowed.test/done']) {
      const res = await confirm(stack, m.merchant, (await createPayment(stack, m.merchant, { amount: 1000 })).body.data.id, { payment_method: card(CARDS_3DS.always), return_url: good });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
  });

  it('refuses host entries that are not host names (400 at body/hosts/<i>)', async () => {
    const res = await setHosts(f, ['https://shop.example.test', 'shop.example.test:443', 'Shop.Example.test', 'ok.example.test']);
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields.map((x: any) => x.path)).toEqual(['body/hosts/0', 'body/hosts/1', 'body/hosts/2']);
  });

  it('sends the customer to no host the account stopped allowing after the confirm: the page instead', async () => {
    const m = await paymentsFixture(stack);
    const { url } = await requiringAction(m);
    expect((await setHosts(m, ['elsewhere.example.test'])).status).toBe(200);
    const landed = await hit(await answerChallenge(url));
    expect(landed.status).toBe(200);
    expect(landed.location).toBeNull();
  });
});

describe('the return route\'s rate limits', () => {
  it('answers 429 with Retry-After past its budget per payment', async () => {
    const link = returnLink(newId('pay'), newId('ch'));
    const statuses: number[] = [];
    for (let i = 0; i <= PER_PAYMENT; i++) statuses.push((await hit(link)).status);
    expect(statuses).toEqual([...Array(PER_PAYMENT).fill(404), 429]);
    expect((await hit(link)).retryAfter).toMatch(/^\d+$/);
  });

  it('answers 429 past its budget per source IP, whichever payments the requests name', async () => {
    let refused: Awaited<ReturnType<typeof hit>> | undefined;
    for (let i = 0; i < PER_IP + 1 && !refused; i++) {
      const res = await hit(returnLink(newId('pay'), newId('ch')));
      if (res.status === 429) refused = res;
    }
    expect(refused?.retryAfter).toMatch(/^\d+$/);
  });
});
