import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createMerchant, Merchant, startStack, TestStack } from '../support/stack';
import { freePort } from './support';

/** An API whose Temporal address has no server behind it: commands fail fast and cleanly, reads work. */
describe('Temporal unavailable', () => {
  let stack: TestStack;
  let merchant: Merchant;

  beforeAll(async () => {
    stack = await startStack({ TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`, TEMPORAL_NAMESPACE: 'default' });
    merchant = await createMerchant(stack);
  });
  afterAll(async () => stack?.close());

  it('answers commands with 503 temporal_unavailable and Retry-After', async () => {
    const started = Date.now();
    const res = await stack.http.post('/v1/payments').set(bearer(merchant.secretKey)).send({ amount: 1000, currency: 'USD' });
    expect(res.status, JSON.stringify(res.body)).toBe(503);
    expect(res.body.error.details.reason).toBe('temporal_unavailable');
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Date.now() - started).toBeLessThan(15_000);
    // Nothing was left behind for a payment that was never started.
    expect(await stack.db('live.payments').where({ account_id: merchant.account.id })).toHaveLength(0);
  });

  it('keeps reads and plain configuration writes working', async () => {
    const customer = await stack.http.post('/v1/customers').set(bearer(merchant.secretKey)).send({ name: 'Still here', email: 'still@example.com' });
    expect(customer.status, JSON.stringify(customer.body)).toBe(201);
    for (const path of ['/v1/payments', '/v1/customers', `/v1/customers/${customer.body.data.id}`, '/v1/events', '/v1/webhook-endpoints']) {
      const res = await stack.http.get(path).set(bearer(merchant.secretKey));
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
    }
  });

  it('reports not ready on /readyz while /healthz stays up', async () => {
    const ready = await stack.http.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.error.details).toMatchObject({ reason: 'temporal_unavailable', database: true, temporal: false });
    expect((await stack.http.get('/healthz')).status).toBe(200);
  });
});
