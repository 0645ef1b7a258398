import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createMerchant, Merchant, startStack, TestStack } from '../support/stack';

/** Regressions for what the fuzzer (fuzz.test.ts) found, pinned as plain requests. */
describe('fuzzer findings', () => {
  let stack: TestStack;
  let merchant: Merchant;

  beforeAll(async () => {
    stack = await startStack({ RATE_LIMIT_RPS: '0' });
    merchant = await createMerchant(stack);
  });
  afterAll(async () => stack?.close());

  it('refuses a NUL character in a body (Postgres cannot store it) with 400, not 500', async () => {
    const customer = await stack.http.post('/v1/customers').set(bearer(merchant.secretKey)).send({ name: 'Nul', email: 'nul@example.com' });
    expect(customer.status).toBe(201);
    const patched = await stack.http.patch(`/v1/customers/${customer.body.data.id}`).set(bearer(merchant.secretKey))
      .send({ country: 'AS', metadata: { 'a\u0000b': '' } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(400);
    expect(patched.body.error.details).toMatchObject({ reason: 'validation_failed', fields: [{ path: 'body/metadata/a\\u0000b' }] });
    const created = await stack.http.post('/v1/customers').set(bearer(merchant.secretKey)).send({ name: 'x\u0000y', email: 'nul2@example.com' });
    expect(created.status, JSON.stringify(created.body)).toBe(400);
    expect(created.body.error.details.fields[0].path).toBe('body/name');
  });

  it('refuses a NUL character in a query string with 400', async () => {
    const res = await stack.http.get('/v1/events?type=payment%00x').set(bearer(merchant.secretKey));
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error.details.reason).toBe('validation_failed');
  });
});
