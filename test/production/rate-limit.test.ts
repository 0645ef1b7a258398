import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createMerchant, Merchant, startStack, TestStack } from '../support/stack';
import { sleep } from './support';

describe('rate limiting per credential', () => {
  let stack: TestStack;
  let merchant: Merchant;
  let other: Merchant;

  beforeAll(async () => {
    stack = await startStack({ RATE_LIMIT_RPS: '5', RATE_LIMIT_BURST: '3' });
    merchant = await createMerchant(stack);
    other = await createMerchant(stack);
  });
  afterAll(async () => stack?.close());

  const burst = (token: string, n: number) =>
    Promise.all(Array.from({ length: n }, () => stack.http.get('/v1/customers').set(bearer(token))));

  it('answers 429 rate_limited with Retry-After past the per-second rate plus the burst reserve', async () => {
    const responses = await burst(merchant.secretKey, 12);
    const ok = responses.filter((r) => r.status === 200);
    const limited = responses.filter((r) => r.status === 429);
    expect(ok).toHaveLength(8); // 5 this second + 3 from the burst reserve
    expect(limited).toHaveLength(4);
    for (const r of ok) expect(r.headers['x-ratelimit-limit']).toBe('5');
    expect(ok.map((r) => Number(r.headers['x-ratelimit-remaining'])).sort((a, b) => a - b)[0]).toBe(0);
    for (const r of limited) {
      expect(r.body.error.details.reason).toBe('rate_limited');
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number.isInteger(Number(r.headers['retry-after']))).toBe(true);
      expect(r.headers['x-ratelimit-remaining']).toBe('0');
    }
  });

  it('counts each API key and each user on its own', async () => {
    const [otherKey, ownerJwt] = await Promise.all([burst(other.secretKey, 8), burst(merchant.token, 3)]);
    expect(otherKey.every((r) => r.status === 200)).toBe(true);
    expect(ownerJwt.map((r) => r.status)).not.toContain(429);
  });

  it('lets the credential in again after Retry-After', async () => {
    await burst(merchant.secretKey, 6);
    const limited = await stack.http.get('/v1/customers').set(bearer(merchant.secretKey));
    expect(limited.status).toBe(429);
    await sleep(Number(limited.headers['retry-after']) * 1000 + 50);
    const again = await stack.http.get('/v1/customers').set(bearer(merchant.secretKey));
    expect(again.status).toBe(200);
  });

  it('is off with RATE_LIMIT_RPS=0, and never counts open routes', async () => {
    const unlimited = await startStack({ RATE_LIMIT_RPS: '0' });
    try {
      const m = await createMerchant(unlimited);
      const responses = await Promise.all(Array.from({ length: 40 }, () => unlimited.http.get('/v1/customers').set(bearer(m.secretKey))));
      expect(responses.every((r) => r.status === 200 && r.headers['x-ratelimit-limit'] === undefined)).toBe(true);
    } finally {
      await unlimited.close();
    }
    const health = await Promise.all(Array.from({ length: 20 }, () => stack.http.get('/healthz')));
    expect(health.every((r) => r.status === 200)).toBe(true);
  });
});
