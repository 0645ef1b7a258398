import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bearer, createMerchant, Merchant, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, card } from '../support/payments';
import { eventually } from '../support/worker-process';
import { TcpProxy } from './support';

/**
 * An API that reaches Temporal through a proxy the test cuts: a create whose workflow cannot start
 * (503) takes back the guest customer and the card it wrote; its retry with the same key, once Temporal
 * is back, makes the payment with one guest.
 */
describe('a create whose workflow cannot start', () => {
  let proxy: TcpProxy;
  let stack: TestStack;
  let worker: RunningWorker;
  let merchant: Merchant;

  beforeAll(async () => {
    const temporal = new URL(`tcp://${inject('temporalAddress')}`);
    proxy = await TcpProxy.start(temporal.hostname, Number(temporal.port));
    proxy.cut();
    stack = await startStack({ TEMPORAL_ADDRESS: `127.0.0.1:${proxy.port}` });
    // The worker reaches Temporal directly: only the API's way there is cut.
    worker = await startWorker({ ...stack, config: { ...stack.config, temporal: { ...stack.config.temporal, address: inject('temporalAddress') } } });
    merchant = await createMerchant(stack);
  });
  afterAll(async () => {
    await worker?.stop();
    await stack?.close();
    await proxy?.close();
  });

  const guests = () => stack.db('live.customers').where({ account_id: merchant.account.id, is_guest: true });
  const payments = () => stack.db('live.payments').where({ account_id: merchant.account.id });
  const create = (key: string, body: Record<string, unknown>) =>
    stack.http.post('/v1/payments').set(bearer(merchant.secretKey)).set('Idempotency-Key', key).send(body);
  /**
   * As a merchant's client retries: until Temporal is reachable again. The gRPC channel backs off after
   * the failed connects of the earlier tests, so the first retry after the restore may still be a 503.
   */
  const retryUntilAnswered = (key: string, body: Record<string, unknown>) => eventually(async () => {
    const res = await create(key, body);
    return res.status === 503 ? undefined : res;
  }, 90_000, 1_000);

  it('erases the inline card and removes the guest of a create and confirm that never reached Temporal', async () => {
    const refused = await create('guest-unstarted-2', {
      amount: 900, currency: 'USD', confirm: true, payment_method: card(CARDS.visa), customer: { name: 'Second Guest' },
    });
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(await guests().where({ name: 'Second Guest' })).toHaveLength(0);
    const cards = await stack.db('live.payment_methods').where({ account_id: merchant.account.id });
    expect(cards).toHaveLength(1);
    expect(cards[0]).toMatchObject({ customer_id: null, pan_encrypted: '' });
  });

  it('leaves no guest customer behind, and its retry once Temporal is back makes one payment with one guest', async () => {
    const body = { amount: 1200, currency: 'USD', customer: { name: 'Guest Shopper', email: 'guest@example.com' } };
    const refused = await create('guest-unstarted-1', body);
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body.error.details.reason).toBe('temporal_unavailable');
    expect(await guests()).toHaveLength(0);
    expect(await payments()).toHaveLength(0);

    proxy.restore();
    try {
      const retried = await retryUntilAnswered('guest-unstarted-1', body);
      expect(retried.status, JSON.stringify(retried.body)).toBe(201);
      const [guest] = await guests();
      expect(await guests()).toHaveLength(1);
      expect(guest).toMatchObject({ name: 'Guest Shopper', email: 'guest@example.com' });
      expect((await payments()).map((p: { id: string; customer_id: string }) => [p.id, p.customer_id])).toEqual([[retried.body.data.id, guest.id]]);
    } finally {
      proxy.cut();
    }
  }, 120_000);

  it('keeps the guest when the start may have reached Temporal before it went away', async () => {
    // Connected, then cut: the start fails, but whether it reached the server first is unknown, and a
    // workflow that did start writes a payment naming that guest once Temporal is back.
    const body = { amount: 1500, currency: 'USD', customer: { name: 'Third Guest' } };
    const refused = await create('guest-unstarted-3', body);
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(await guests().where({ name: 'Third Guest' })).toHaveLength(1);

    proxy.restore();
    const retried = await retryUntilAnswered('guest-unstarted-3', body);
    expect(retried.status, JSON.stringify(retried.body)).toBe(201);
    const [payment] = await payments().where({ id: retried.body.data.id });
    expect(await guests().where({ id: payment.customer_id, name: 'Third Guest' })).toHaveLength(1);
  }, 120_000);
});
