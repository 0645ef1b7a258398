import Koa from 'koa';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkoutPages } from '../../api/checkout-page';
import { newUnguessableId } from '../../lib/ids';
import { startStack, type TestStack } from '../support/stack';

/**
 * The hosted page's own budget per source IP (docs/checkout.md): walking guessed session ids, or
 * flooding one page, is answered 429 with a page and Retry-After once the budget is spent, before any
 * session is looked up.
 */
describe('the hosted page limits requests per source IP', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('answers 429 once an IP spent its budget, GET and POST alike; another IP is not affected', async () => {
    const app = new Koa({ proxy: true });
    app.use(checkoutPages(stack.deps, 3));
    const http = supertest(app.callback());
    const from = (ip: string) => ({ 'X-Forwarded-For': ip });
    for (let i = 0; i < 3; i++) {
      const res = await http.get(`/checkout/${newUnguessableId('cs')}`).set(from('203.0.113.7'));
      expect(res.status).toBe(404);
      expect(res.text).toContain('Checkout not found');
    }
    const limited = await http.post(`/checkout/${newUnguessableId('cs')}`).set(from('203.0.113.7')).type('form').send({ number: '4242424242424242' });
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toMatch(/^\d+$/);
    expect(limited.text).toContain('Too many requests');
    expect(limited.text).not.toContain('4242');
    expect((await http.get(`/checkout/${newUnguessableId('cs')}`).set(from('198.51.100.9'))).status).toBe(404);
  });
});
