import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Koa from 'koa';
import supertest from 'supertest';
import { bearer, createMerchant, Merchant, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { insertApiKey } from '../../db/api-keys';
import { paymentLinkPage } from '../../api/routes/payment-link-page';
import { paymentRow, sessionRow, SHOP } from './session-support';

// Payment links against the real API, Postgres and Temporal: the /v1 routes, and the public URL each
// visit of which opens a new checkout session (api/routes/payment-link-page.ts, mounted here on its own
// with a low per-IP limit so that the limit can be reached).

let stack: TestStack;
let worker: RunningWorker;
let m: Merchant;
let page: ReturnType<typeof supertest>;

const ITEMS = [{ name: 'Concert ticket', quantity: 2, unit_amount: 4500 }, { name: 'Booking fee', quantity: 1, unit_amount: 250 }];
const LINK_FIELDS = ['object', 'id', 'url', 'active', 'line_items', 'amount', 'currency', 'success_url', 'created_at', 'updated_at', 'metadata'].sort();

beforeAll(async () => {
  stack = await startStack();
  worker = await startWorker(stack);
  m = await createMerchant(stack);
  const app = new Koa();
  app.use(paymentLinkPage(stack.deps, { perIpPerMinute: 8 }));
  page = supertest(app.callback());
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
});

const createLink = (body: Record<string, unknown>, key = m.secretKey) => stack.http.post('/v1/payment-links').set(bearer(key)).send(body);

async function newLink(body: Record<string, unknown> = { line_items: ITEMS, success_url: `${SHOP}/thanks` }) {
  const res = await createLink(body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

/** Visits a link's URL as a browser would; answers where it was sent. */
async function visit(url: string) {
  const res = await page.get(new URL(url).pathname).redirects(0);
  return { status: res.status, location: res.headers.location as string | undefined, text: res.text, headers: res.headers };
}

describe('payment links', () => {
  it('creates a link: 201 with its shape, the amount the sum of its items', async () => {
    const link = await newLink({ line_items: ITEMS, success_url: `${SHOP}/thanks`, metadata: { campaign: 'spring' } });
    expect(Object.keys(link).sort()).toEqual(LINK_FIELDS);
    expect(link).toEqual({
      object: 'payment_link', id: expect.stringMatching(/^plink_[0-9A-Z]{26}$/), url: `${stack.config.publicUrl}/pay/${link.id}`, active: true,
      line_items: ITEMS, amount: 9250, currency: 'USD', success_url: `${SHOP}/thanks`, created_at: expect.any(String), updated_at: expect.any(String),
      metadata: { campaign: 'spring' },
    });
    const plain = await newLink({ amount: 1200, currency: 'EUR' });
    expect(plain).toMatchObject({ amount: 1200, currency: 'EUR', line_items: null, success_url: null });
  });

  it('refuses bad links with the field and why, and keys without checkout:write', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ amount: 100, currency: 'USD', line_items: ITEMS }, 'body'],
      [{}, 'body'],
      [{ amount: 100 }, 'body/currency'],
      [{ amount: 100, currency: 'USD', success_url: 'http://shop.example.test/' }, 'body/success_url'],
    ];
    for (const [body, path] of cases) {
      const res = await createLink(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details.fields[0].path, JSON.stringify(body)).toBe(path);
    }
    expect((await createLink({ amount: 100, currency: 'USD' }, m.publishableKey)).status).toBe(403);
    const { plaintext } = await insertApiKey(stack.db, stack.config.apiKeyPepper, {
      accountId: m.account.id, environment: 'production', type: 'SECRET', name: 'ro', managed: false, permissions: { checkout: ['read'] },
    });
    const readOnly = await createLink({ amount: 100, currency: 'USD' }, plaintext);
    expect(readOnly.status).toBe(403);
    expect(readOnly.body.error.details.required).toBe('checkout:write');
  });

  it('gets, lists (keyset, by active) and turns links off and on', async () => {
    const other = await createMerchant(stack);
    const links = [];
    for (let i = 0; i < 3; i += 1) links.push((await stack.http.post('/v1/payment-links').set(bearer(other.secretKey)).send({ amount: 100 + i, currency: 'USD' })).body.data);
    const got = await stack.http.get(`/v1/payment-links/${links[0].id}`).set(bearer(other.secretKey));
    expect(got.body.data).toEqual(links[0]);
    expect((await stack.http.get(`/v1/payment-links/${links[0].id}`).set(bearer(m.secretKey))).status).toBe(404);

    const first = await stack.http.get('/v1/payment-links?limit=2').set(bearer(other.secretKey));
    expect(first.body).toMatchObject({ total: 3, has_more: true });
    expect(first.body.data.map((l: any) => l.id)).toEqual([links[2].id, links[1].id]);
    const next = await stack.http.get(`/v1/payment-links?limit=2&starting_after=${links[1].id}`).set(bearer(other.secretKey));
    expect(next.body.data.map((l: any) => l.id)).toEqual([links[0].id]);

    const off = await stack.http.patch(`/v1/payment-links/${links[1].id}`).set(bearer(other.secretKey)).send({ active: false });
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    expect(off.body.data).toMatchObject({ id: links[1].id, active: false });
    const inactive = await stack.http.get('/v1/payment-links?active=false').set(bearer(other.secretKey));
    expect(inactive.body.data.map((l: any) => l.id)).toEqual([links[1].id]);
    expect((await stack.http.patch(`/v1/payment-links/${links[1].id}`).set(bearer(other.secretKey)).send({})).status).toBe(400);
    const on = await stack.http.patch(`/v1/payment-links/${links[1].id}`).set(bearer(other.secretKey)).send({ active: true });
    expect(on.body.data.active).toBe(true);
  });
});

describe('a payment link\'s URL', () => {
  it('sends each visit (303) to a new checkout session for its items, each with its own payment', async () => {
    const link = await newLink();
    const first = await visit(link.url);
    const second = await visit(link.url);
    for (const v of [first, second]) {
      expect(v.status).toBe(303);
      expect(v.location).toMatch(new RegExp(`^${stack.config.publicUrl}/checkout/cs_[0-9A-Z]{26}$`));
      expect(v.headers['cache-control']).toBe('no-store');
    }
    const ids = [first, second].map((v) => v.location!.split('/').pop()!);
    expect(ids[0]).not.toBe(ids[1]);
    const rows = await Promise.all(ids.map((id) => sessionRow(stack, id)));
    for (const row of rows) {
      expect(row).toMatchObject({
        account_id: m.account.id, status: 'OPEN', amount: 9250, currency: 'USD', line_items: ITEMS,
        success_url: `${SHOP}/thanks`, cancel_url: null, payment_link_id: link.id,
      });
      expect(await paymentRow(stack, row.payment_id)).toMatchObject({ checkout_session_id: row.id, amount: 9250, status: 'CREATED' });
    }
    expect(rows[0].payment_id).not.toBe(rows[1].payment_id);
    // The merchant sees them as any session.
    const listed = await stack.http.get('/v1/checkout-sessions?limit=100').set(bearer(m.secretKey));
    expect(listed.body.data.map((s: any) => s.id)).toEqual(expect.arrayContaining(ids));
  });

  it('answers 410 with a page once the link is off, and 404 for a link that does not exist', async () => {
    const link = await newLink({ amount: 500, currency: 'USD' });
    expect((await stack.http.patch(`/v1/payment-links/${link.id}`).set(bearer(m.secretKey)).send({ active: false })).status).toBe(200);
    const before = await stack.db('live.checkout_sessions').where({ payment_link_id: link.id }).count({ n: '*' });
    const gone = await visit(link.url);
    expect(gone.status).toBe(410);
    expect(gone.headers['content-type']).toMatch(/^text\/html/);
    expect(gone.text).toContain('no longer available');
    expect(await stack.db('live.checkout_sessions').where({ payment_link_id: link.id }).count({ n: '*' })).toEqual(before);

    for (const path of ['/pay/plink_01NOSUCHLINK0000000000000', '/pay/nonsense', '/pay/%E0%A4%A']) {
      const res = await page.get(path).redirects(0);
      expect(res.status, path).toBe(404);
      expect(res.text).toContain('Link not found');
    }
  });

  it('limits visits per source IP (429), before any session is opened', async () => {
    const app = new Koa();
    app.use(paymentLinkPage(stack.deps, { perIpPerMinute: 2 }));
    const limited = supertest(app.callback());
    const link = await newLink({ amount: 700, currency: 'USD' });
    const path = new URL(link.url).pathname;
    expect((await limited.get(path).redirects(0)).status).toBe(303);
    expect((await limited.get(path).redirects(0)).status).toBe(303);
    const refused = await limited.get(path).redirects(0);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(await stack.db('live.checkout_sessions').where({ payment_link_id: link.id }).count({ n: '*' })).toEqual([{ n: 2 }]);
  });
});
