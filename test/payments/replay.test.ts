import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Worker } from '@temporalio/worker';
import { execFileSync } from 'node:child_process';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { findTemporalCli } from '../../scripts/temporal-cli';
import { bearer, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, card, confirm, createPayment, pay, paymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { paymentWorkflowId } from '../../contracts/payments';
import { checkoutWorkflowId } from '../../contracts/checkout';
import { enabledEndpoint, Receiver } from '../webhooks/support';

/** The sandbox's 3-D Secure test cards (docs/authentication.md). */
const CARDS_3DS = { always: '4000002760003184', stepUp: '4000002500003155' } as const;

/**
 * Determinism guard: histories recorded from real runs (checked in under test/histories/) are replayed
 * against the current workflow code; a change that would break running workflows fails here.
 * `RECORD_HISTORIES=1 npx vitest run test/payments/replay.test.ts` records them afresh;
 * `RECORD_HISTORIES=payment-create-and-confirm,…` records only the named ones (a new path, say).
 */
const DIR = join(__dirname, '..', 'histories');
const RECORD = process.env.RECORD_HISTORIES ?? '';
/** Paths also taken created and confirmed in one request: the first attempt is made with the row. */
const IN_ONE_REQUEST_PATHS = ['declined', 'cascade-after-outage', 'authentication-notified', 'step-up', 'no-second-challenge'];
const recorded = (name: string) => RECORD === '1' || RECORD.split(',').includes(name);

describe('replaying recorded workflow histories', () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith('.json'));

  it('has recorded histories to replay', () => {
    expect(files.length).toBeGreaterThanOrEqual(5);
    // The create update that carries a confirm (create and confirm in one request) is covered too, and
    // every path of a customer authentication.
    expect(files).toContain('payment-create-and-confirm.json');
    for (const name of ['notified', 'returned', 'failed', 'timeout', 'canceled']) expect(files).toContain(`payment-authentication-${name}.json`);
    expect(files).toEqual(expect.arrayContaining(['payment-step-up.json', 'payment-no-second-challenge.json']));
    for (const path of IN_ONE_REQUEST_PATHS) expect(files).toContain(`payment-create-and-confirm-${path}.json`);
    // A checkout session's workflow, and a payment that tells its session it is paid.
    expect(files).toEqual(expect.arrayContaining(['checkout-paid.json', 'checkout-expired.json', 'payment-checkout-paid.json']));
    // A subscribed endpoint: the payment's events fan out beside its answer.
    expect(files).toEqual(expect.arrayContaining(['payment-create-and-confirm-webhook.json', 'payment-create-and-confirm-webhook-cascade.json']));
    // Subscriptions (test/billing/, RECORD_HISTORIES=year,trial,…): a first run and a run continued from a
    // renewal of each path, and invoices' payments, which carry their invoice and tell their subscription.
    for (const name of ['year', 'trial', 'proration', 'paused', 'dunning-recovered', 'action-required']) {
      expect(files).toEqual(expect.arrayContaining([`subscription-${name}.json`, `subscription-${name}-first.json`, `payment-invoice-${name}.json`]));
    }
    expect(files).toContain('subscription-canceled-now.json');
    // Disputes (test/disputes/disputes.test.ts, RECORD_HISTORIES=dispute-won,…): won, accepted, and the deadline passed.
    expect(files).toEqual(expect.arrayContaining(['dispute-won.json', 'dispute-accepted.json', 'dispute-overdue.json']));
  });

  it('replays every one against the current workflow code', async () => {
    const histories = files.map((file) => ({
      workflowId: file.replace(/\.json$/, ''),
      history: historyFromJSON(JSON.parse(readFileSync(join(DIR, file), 'utf8'))),
    }));
    const failures: string[] = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: inject('workflowBundlePath') } }, histories)) {
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    expect(failures).toEqual([]);
  });
});

describe.runIf(RECORD !== '' && RECORD !== '0')('recording histories', () => {
  let sim: TestSimulator;
  let stack: TestStack;
  let worker: RunningWorker;
  beforeAll(async () => {
    sim = await startSimulator();
    stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '1000', AUTHENTICATION_TIMEOUT: '3s' });
    worker = await startWorker(stack);
  });
  afterAll(async () => {
    await worker?.stop();
    await stack?.close();
    await sim?.close();
  });

  it('records one history per payment path', async () => {
    const f = await paymentsFixture(stack);
    const outage = await paymentsFixture(stack, { primary: { outage: true } });
    const softAfterAuthentication = await paymentsFixture(stack, { primary: { decline_after_authentication: 'issuer_unavailable' } });
    const simPost = (path: string, body: unknown) => fetch(`${sim.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const requiringAction = async (m: typeof f, number: string, create: Record<string, unknown> = {}) => {
      const created = await createPayment(stack, m.merchant, { amount: 4200, ...create });
      const res = await confirm(stack, m.merchant, created.body.data.id, { payment_method: card(number), return_url: 'https://shop.example.test/done' });
      expect(res.body.data.status, JSON.stringify(res.body)).toBe('REQUIRES_ACTION');
      return { id: created.body.data.id as string, url: res.body.data.next_action.redirect_to_url.url as string };
    };
    /** The same, created and confirmed in one request (the first attempt made with the row). */
    const requiringActionInOne = async (m: typeof f, number: string) => {
      const res = await createPayment(stack, m.merchant, { amount: 4200, confirm: true, payment_method: card(number), return_url: 'https://shop.example.test/done' });
      expect(res.body.data.status, JSON.stringify(res.body)).toBe('REQUIRES_ACTION');
      return { id: res.body.data.id as string, url: res.body.data.next_action.redirect_to_url.url as string };
    };
    const answerChallenge = async (url: string, action: 'approve' | 'fail') => (await fetch(url, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `action=${action}`, redirect: 'manual',
    })).headers.get('location');
    const scenarios: Record<string, () => Promise<string>> = {
      'payment-approved': async () => (await pay(stack, f.merchant, CARDS.visa)).body.data.id,
      'payment-hard-decline': async () => (await pay(stack, f.merchant, CARDS.declined)).body.data.id,
      'payment-all-soft-declines': async () => (await pay(stack, f.merchant, CARDS.processingError)).body.data.id,
      'payment-cascade-after-outage': async () => (await pay(stack, outage.merchant, CARDS.visa)).body.data.id,
      'payment-no-eligible-provider': async () => {
        const created = await createPayment(stack, f.merchant, { routing: { exclude_provider_config_ids: [f.primary.id, f.backup.id] } });
        await confirm(stack, f.merchant, created.body.data.id, { payment_method: card(CARDS.visa) });
        return created.body.data.id;
      },
      'payment-authorize-then-capture': async () => {
        const res = await pay(stack, f.merchant, CARDS.visa, { auto_capture: false });
        await stack.http.post(`/v1/payments/${res.body.data.id}/capture`).set(bearer(f.merchant.secretKey)).send({ amount: 500 });
        return res.body.data.id;
      },
      'payment-authorize-then-cancel': async () => {
        const res = await pay(stack, f.merchant, CARDS.visa, { auto_capture: false });
        await stack.http.post(`/v1/payments/${res.body.data.id}/cancel`).set(bearer(f.merchant.secretKey)).send({});
        return res.body.data.id;
      },
      'payment-declined-then-approved': async () => {
        const res = await pay(stack, f.merchant, CARDS.declined);
        await confirm(stack, f.merchant, res.body.data.id, { payment_method: card(CARDS.visa) });
        return res.body.data.id;
      },
      // Create and confirm in one request: the `create` update carries the confirm, and the row, the plan
      // and its first attempt are one local activity; no expiry timer for a payment that succeeds at once.
      'payment-create-and-confirm': async () => (await createPayment(stack, f.merchant, { confirm: true, payment_method: card(CARDS.visa) })).body.data.id,
      // 3-D Secure (docs/authentication.md): the processor's notification completes the challenge…
      'payment-authentication-notified': async () => {
        const { id, url } = await requiringAction(f, CARDS_3DS.always);
        await answerChallenge(url, 'approve');
        return id;
      },
      // …or the customer's return does (the notification held back, then delivered twice, applied once).
      'payment-authentication-returned': async () => {
        await simPost('/_inspect/notifications/hold', { hold: true });
        const { id, url } = await requiringAction(f, CARDS_3DS.always, { auto_capture: false });
        const back = await answerChallenge(url, 'approve');
        await fetch(back!, { redirect: 'manual' });
        await simPost('/_inspect/notifications/release', { duplicate: true });
        await simPost('/_inspect/notifications/hold', { hold: false });
        return id;
      },
      'payment-authentication-failed': async () => {
        const { id, url } = await requiringAction(f, CARDS_3DS.always);
        await answerChallenge(url, 'fail');
        return id;
      },
      'payment-authentication-timeout': async () => {
        const { id } = await requiringAction(f, CARDS_3DS.always);
        await new Promise((r) => setTimeout(r, 3500));
        return id;
      },
      'payment-authentication-canceled': async () => {
        const { id } = await requiringAction(f, CARDS_3DS.always);
        await stack.http.post(`/v1/payments/${id}/cancel`).set(bearer(f.merchant.secretKey)).send({});
        return id;
      },
      'payment-step-up': async () => {
        const { id, url } = await requiringAction(f, CARDS_3DS.stepUp);
        await answerChallenge(url, 'approve');
        return id;
      },
      'payment-no-second-challenge': async () => {
        const { id, url } = await requiringAction(softAfterAuthentication, CARDS_3DS.always);
        await answerChallenge(url, 'approve');
        return id;
      },
    };
    // In one request (the first attempt made with the row): declined (then waiting, with its expiry armed),
    // a cascade past an outage, a challenge, a step-up and no second challenge.
    const approvedChallenge = (requiring: () => Promise<{ id: string; url: string }>) => async () => {
      const { id, url } = await requiring();
      await answerChallenge(url, 'approve');
      return id;
    };
    const inOne = async (m: typeof f, number: string) => (await createPayment(stack, m.merchant, { confirm: true, payment_method: card(number) })).body.data.id as string;
    Object.assign(scenarios, {
      'payment-create-and-confirm-declined': () => inOne(f, CARDS.declined),
      'payment-create-and-confirm-cascade-after-outage': () => inOne(outage, CARDS.visa),
      'payment-create-and-confirm-authentication-notified': approvedChallenge(() => requiringActionInOne(f, CARDS_3DS.always)),
      'payment-create-and-confirm-step-up': approvedChallenge(() => requiringActionInOne(f, CARDS_3DS.stepUp)),
      'payment-create-and-confirm-no-second-challenge': approvedChallenge(() => requiringActionInOne(softAfterAuthentication, CARDS_3DS.always)),
    } satisfies Record<`payment-create-and-confirm-${string}`, () => Promise<string>>);
    // Checkout sessions (docs/checkout.md): one paid (the payment's workflow tells its session), one expired.
    const openSession = async () => {
      const res = await stack.http.post('/v1/checkout-sessions').set(bearer(f.merchant.secretKey))
        .send({ amount: 2500, currency: 'USD', success_url: 'https://shop.example.test/ok', cancel_url: 'https://shop.example.test/back' });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.data as { id: string; payment_id: string };
    };
    const paidSession = async () => {
      const session = await openSession();
      await confirm(stack, f.merchant, session.payment_id, { payment_method: card(CARDS.visa) });
      return session;
    };
    Object.assign(scenarios, {
      'checkout-paid': async () => checkoutWorkflowId((await paidSession()).id),
      'payment-checkout-paid': async () => (await paidSession()).payment_id,
      'checkout-expired': async () => {
        const session = await openSession();
        await stack.http.post(`/v1/checkout-sessions/${session.id}/expire`).set(bearer(f.merchant.secretKey)).send({});
        return checkoutWorkflowId(session.id);
      },
    });
    // A merchant with a subscribed endpoint: the payment's events fan out to deliveries, beside the answer.
    const listenedPayment = async (number: string) => {
      const m = await paymentsFixture(stack);
      const receiver = await Receiver.start();
      await enabledEndpoint(stack, m.merchant, receiver, { events: ['payment_intent.succeeded', 'payment_intent.payment_failed'] });
      const id = await inOne(m, number);
      await new Promise((r) => setTimeout(r, 1500));
      await receiver.close();
      return id;
    };
    Object.assign(scenarios, {
      'payment-create-and-confirm-webhook': () => listenedPayment(CARDS.visa),
      'payment-create-and-confirm-webhook-cascade': () => listenedPayment(CARDS.processingError),
    });
    mkdirSync(DIR, { recursive: true });
    const client = await stack.deps.temporal();
    for (const [name, run] of Object.entries(scenarios).filter(([name]) => recorded(name))) {
      const id = await run();
      const handle = client.workflow.getHandle(id.startsWith('checkout/') ? id : paymentWorkflowId(id));
      // FAILED and AUTHORIZED payments stay open (they may be confirmed or captured later): record the
      // history as it stands once the last command's work has settled.
      await new Promise((r) => setTimeout(r, 1500));
      // Exported the way an operator would: `temporal workflow show --output json`.
      const json = execFileSync(findTemporalCli('temporal')!, ['workflow', 'show', '--workflow-id', handle.workflowId, '--output', 'json', '--address', stack.config.temporal.address!, '--namespace', stack.config.temporal.namespace], { encoding: 'utf8' });
      writeFileSync(join(DIR, `${name}.json`), JSON.stringify(JSON.parse(json), null, 1));
    }
  }, 120_000);
});
