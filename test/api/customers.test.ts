import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createMerchant, Merchant, signToken, startStack, TestStack, unique } from '../support/stack';
import { loadCardForAuthorization, wipeCvc } from '../../db/payment-methods';

let stack: TestStack;
beforeAll(async () => { stack = await startStack(); });
afterAll(async () => { await stack.close(); });

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const CARD = { number: '4242 4242 4242 4242', exp_month: 12, exp_year: new Date().getUTCFullYear() + 3, cvc: '123' };

async function createCustomer(m: Merchant, body: object = { name: 'Ada', email: 'ada@example.com' }, credential = m.secretKey) {
  const res = await stack.http.post('/v1/customers').set(bearer(credential)).send(body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

async function addAddress(m: Merchant, customerId: string, body: object = { line1: '1 Main St' }) {
  const res = await stack.http.post(`/v1/customers/${customerId}/addresses`).set(bearer(m.secretKey)).send(body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

/** A user with the given role on the merchant's account, added through the API. */
async function member(m: Merchant, role: string): Promise<string> {
  const userId = unique('usr');
  const res = await stack.http.post(`/v1/account-memberships?account_id=${m.account.id}`).set(bearer(m.token)).send({ user_id: userId, role });
  expect(res.status).toBe(201);
  return signToken({ sub: userId, workspace_id: m.workspaceId });
}

describe('customers', () => {
  it('creates a customer with addresses; the first address of each type is its default', async () => {
    const m = await createMerchant(stack);
    const res = await stack.http.post(`/v1/customers?account_id=${m.account.id}`).set(bearer(m.token)).send({
      name: 'Ada Lovelace', email: 'ada@example.com', phone: '+44 20 7946 0000', country: 'GB',
      alternate_emails: ['ada@work.example'], is_guest: false, metadata: { crm: '42' },
      addresses: [
        { line1: '12 St James Sq', city: 'London', zip: 'SW1Y 4JH', country: 'GB' },
        { type: 'BILLING', line1: 'second billing' },
        { type: 'SHIPPING', line1: 'depot', label: 'work' },
      ],
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ success: true, message: 'Customer created' });
    const c = res.body.data;
    expect(c).toMatchObject({
      object: 'customer', account_id: m.account.id, name: 'Ada Lovelace', email: 'ada@example.com', phone: '+44 20 7946 0000',
      country: 'GB', alternate_emails: ['ada@work.example'], is_guest: false, deleted: false, metadata: { crm: '42' },
    });
    expect(c.id).toMatch(/^cus_[0-9A-Z]{26}$/);
    expect(c.created_at).toMatch(ISO);
    expect(c.payment_methods).toBeUndefined();
    expect(c.addresses).toHaveLength(3);
    for (const a of c.addresses) {
      expect(a).toMatchObject({ object: 'customer_address', customer_id: c.id });
      expect(a.id).toMatch(/^addr_/);
    }
    const byLine = Object.fromEntries(c.addresses.map((a: any) => [a.line1, a]));
    expect(byLine['12 St James Sq']).toMatchObject({ type: 'BILLING', is_default: true, city: 'London', zip: 'SW1Y 4JH' });
    expect(byLine['second billing']).toMatchObject({ type: 'BILLING', is_default: false });
    expect(byLine.depot).toMatchObject({ type: 'SHIPPING', is_default: true, label: 'work' });
  });

  it('creates a minimal guest customer with an API key (its own account by default)', async () => {
    const m = await createMerchant(stack);
    const c = await createCustomer(m, { is_guest: true });
    expect(c).toMatchObject({ account_id: m.account.id, is_guest: true, name: null, email: null, alternate_emails: [], addresses: [] });
  });

  it('validates the body with field paths', async () => {
    const m = await createMerchant(stack);
    const cases: [object, string, string][] = [
      [{ email: 'not-an-email' }, 'validation_failed', 'body/email'],
      [{ alternate_emails: Array.from({ length: 11 }, (_, i) => `a${i}@example.com`) }, 'validation_failed', 'body/alternate_emails'],
      [{ alternate_emails: ['ok@example.com', 'nope'] }, 'validation_failed', 'body/alternate_emails/1'],
      [{ country: 'gb' }, 'validation_failed', 'body/country'],
      [{ is_guest: 'yes' }, 'validation_failed', 'body/is_guest'],
      [{ metadata: { k: 1 } }, 'validation_failed', 'body/metadata/k'],
      [{ addresses: [{ type: 'HOME' }] }, 'validation_failed', 'body/addresses/0/type'],
      [{ addresses: [{ line1: 'x', floor: 3 }] }, 'unknown_field', 'body/addresses/0/floor'],
      [{ nickname: 'x' }, 'unknown_field', 'body/nickname'],
    ];
    for (const [body, reason, path] of cases) {
      const res = await stack.http.post('/v1/customers').set(bearer(m.secretKey)).send(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details.reason).toBe(reason);
      expect(res.body.error.details.fields.map((f: any) => f.path)).toContain(path);
    }
  });

  it('needs account_id with a token, and refuses an account that is not the caller\'s (403)', async () => {
    const m = await createMerchant(stack);
    const other = await createMerchant(stack);
    const missing = await stack.http.post('/v1/customers').set(bearer(m.token)).send({});
    expect(missing.status).toBe(400);
    expect(missing.body.error.details.fields[0].path).toBe('query/account_id');
    for (const credential of [m.token, m.secretKey]) {
      const res = await stack.http.post(`/v1/customers?account_id=${other.account.id}`).set(bearer(credential)).send({});
      expect(res.status).toBe(403);
      expect(res.body.error.details.reason).toBe('account_access_denied');
    }
  });

  it('lists customers newest first, paginated, without deleted ones', async () => {
    const m = await createMerchant(stack);
    const other = await createMerchant(stack);
    await createCustomer(other);
    const made = [];
    for (let i = 0; i < 5; i += 1) made.push(await createCustomer(m, { name: `c${i}`, addresses: [{ line1: `street ${i}` }] }));
    await stack.http.delete(`/v1/customers/${made[4].id}`).set(bearer(m.secretKey)).expect(200);

    const first = await stack.http.get(`/v1/customers?account_id=${m.account.id}&limit=3`).set(bearer(m.token));
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ success: true, total: 4, page: 1, limit: 3, pages: 2 });
    expect(first.body.data.map((c: any) => c.name)).toEqual(['c3', 'c2', 'c1']);
    expect(first.body.data[0].addresses[0].line1).toBe('street 3');
    const second = await stack.http.get('/v1/customers?page=2&limit=3').set(bearer(m.secretKey));
    expect(second.body.data.map((c: any) => c.name)).toEqual(['c0']);
    const defaults = await stack.http.get('/v1/customers').set(bearer(m.secretKey));
    expect(defaults.body).toMatchObject({ page: 1, limit: 10, total: 4, pages: 1 });

    for (const q of ['page=0', 'limit=0', 'limit=101', 'page=1.5', 'limit=abc', 'sort=name']) {
      const res = await stack.http.get(`/v1/customers?${q}`).set(bearer(m.secretKey));
      expect(res.status, q).toBe(400);
    }
  });

  it('gets a customer; others\' customers are 404 for tokens and keys alike', async () => {
    const m = await createMerchant(stack);
    const other = await createMerchant(stack);
    const c = await createCustomer(m);
    const mine = await stack.http.get(`/v1/customers/${c.id}`).set(bearer(m.token));
    expect(mine.status).toBe(200);
    expect(mine.body.data).toEqual(c);
    for (const credential of [other.token, other.secretKey]) {
      const res = await stack.http.get(`/v1/customers/${c.id}`).set(bearer(credential));
      expect(res.status).toBe(404);
      expect(res.body.error.details.reason).toBe('not_found');
    }
    const junk = await stack.http.get('/v1/customers/nope').set(bearer(m.token));
    expect(junk.status).toBe(404);
    const unknown = await stack.http.get('/v1/customers/cus_01ARZ3NDEKTSV4RRFFQ69G5FAV').set(bearer(m.token));
    expect(unknown.status).toBe(404);
  });

  it('keeps environments apart: a sandbox key never sees live customers, nor a live key sandbox ones', async () => {
    const prod = await createMerchant(stack);
    const sandbox = await createMerchant(stack, { sandboxOf: prod });
    const live = await createCustomer(prod);
    const test = await createCustomer(sandbox);
    expect(await stack.db('sandbox.customers').where({ id: test.id }).first()).toBeTruthy();
    expect(await stack.db('live.customers').where({ id: test.id }).first()).toBeUndefined();

    expect((await stack.http.get(`/v1/customers/${live.id}`).set(bearer(sandbox.secretKey))).status).toBe(404);
    expect((await stack.http.get(`/v1/customers/${test.id}`).set(bearer(prod.secretKey))).status).toBe(404);
    expect((await stack.http.patch(`/v1/customers/${live.id}`).set(bearer(sandbox.secretKey)).send({ name: 'x' })).status).toBe(404);
    const sandboxList = await stack.http.get('/v1/customers').set(bearer(sandbox.secretKey));
    expect(sandboxList.body.data.map((c: any) => c.id)).toEqual([test.id]);
    // The user who owns both reaches each in its own environment.
    expect((await stack.http.get(`/v1/customers/${live.id}`).set(bearer(prod.token))).status).toBe(200);
    expect((await stack.http.get(`/v1/customers/${test.id}`).set(bearer(prod.token))).status).toBe(200);
  });

  it('updates given fields, clears with null, and refuses unknown ones', async () => {
    const m = await createMerchant(stack);
    const c = await createCustomer(m, { name: 'Old', email: 'old@example.com', phone: '1', metadata: { a: '1' } });
    const res = await stack.http.patch(`/v1/customers/${c.id}`).set(bearer(m.secretKey))
      .send({ name: 'New', phone: null, alternate_emails: ['x@example.com'], metadata: { b: '2' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'New', email: 'old@example.com', phone: null, alternate_emails: ['x@example.com'], metadata: { b: '2' } });
    expect(new Date(res.body.data.updated_at).getTime()).toBeGreaterThanOrEqual(new Date(c.updated_at).getTime());
    const bad = await stack.http.patch(`/v1/customers/${c.id}`).set(bearer(m.secretKey)).send({ account_id: 'acct_x' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.reason).toBe('unknown_field');
    const invalid = await stack.http.patch(`/v1/customers/${c.id}`).set(bearer(m.secretKey)).send({ email: 'nope' });
    expect(invalid.status).toBe(400);
  });

  it('deletes softly: the customer says deleted, then is gone (404) everywhere', async () => {
    const m = await createMerchant(stack);
    const c = await createCustomer(m);
    const res = await stack.http.delete(`/v1/customers/${c.id}`).set(bearer(m.secretKey));
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: c.id, deleted: true });
    expect(await stack.db('live.customers').where({ id: c.id }).first()).toMatchObject({ deleted: true });
    expect((await stack.http.get(`/v1/customers/${c.id}`).set(bearer(m.secretKey))).status).toBe(404);
    expect((await stack.http.patch(`/v1/customers/${c.id}`).set(bearer(m.secretKey)).send({ name: 'x' })).status).toBe(404);
    expect((await stack.http.delete(`/v1/customers/${c.id}`).set(bearer(m.secretKey))).status).toBe(404);
    expect((await stack.http.post(`/v1/customers/${c.id}/addresses`).set(bearer(m.secretKey)).send({ line1: 'x' })).status).toBe(404);
  });

  it('enforces customer:read / customer:write by role, refuses publishable keys, hides the account from non-members', async () => {
    const m = await createMerchant(stack);
    const c = await createCustomer(m);
    const viewer = await member(m, 'VIEWER');
    expect((await stack.http.get(`/v1/customers/${c.id}`).set(bearer(viewer))).status).toBe(200);
    expect((await stack.http.get(`/v1/customers?account_id=${m.account.id}`).set(bearer(viewer))).status).toBe(200);
    const write = await stack.http.patch(`/v1/customers/${c.id}`).set(bearer(viewer)).send({ name: 'x' });
    expect(write.status).toBe(403);
    expect(write.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'customer:write' });
    const create = await stack.http.post(`/v1/customers?account_id=${m.account.id}`).set(bearer(viewer)).send({});
    expect(create.status).toBe(403);

    for (const [method, path] of [['get', `/v1/customers/${c.id}`], ['get', '/v1/customers'], ['post', '/v1/customers'],
      ['delete', `/v1/customers/${c.id}`], ['post', `/v1/customers/${c.id}/payment-methods`]] as const) {
      const res = await stack.http[method](path).set(bearer(m.publishableKey)).send(method === 'post' ? {} : undefined);
      expect(res.status, path).toBe(403);
      expect(res.body.error.details.reason).toBe('publishable_key_not_allowed');
    }

    const stranger = signToken({ sub: unique('usr'), workspace_id: m.workspaceId });
    expect((await stack.http.get(`/v1/customers/${c.id}`).set(bearer(stranger))).status).toBe(404);
    expect((await stack.http.get(`/v1/customers?account_id=${m.account.id}`).set(bearer(stranger))).status).toBe(403);
  });

  it('checks a custom key\'s own permissions', async () => {
    const m = await createMerchant(stack);
    const c = await createCustomer(m);
    const created = await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'reader', permissions: { customer: ['read'] } });
    const reader = created.body.data.key;
    expect((await stack.http.get(`/v1/customers/${c.id}`).set(bearer(reader))).status).toBe(200);
    const res = await stack.http.delete(`/v1/customers/${c.id}`).set(bearer(reader));
    expect(res.status).toBe(403);
    expect(res.body.error.details.required).toBe('customer:write');
  });
});

describe('customer addresses', () => {
  it('adds addresses: BILLING by default, the first of a type becomes its default', async () => {
    const m = await createMerchant(stack);
    const c = await createCustomer(m);
    const one = await addAddress(m, c.id, { line1: 'first', country: 'US', city: 'NYC', state: 'NY', zip: '10001', line2: 'Apt 1', label: 'home' });
    expect(one.object).toBe('customer');
    expect(one.addresses).toEqual([expect.objectContaining({
      type: 'BILLING', is_default: true, line1: 'first', line2: 'Apt 1', city: 'NYC', state: 'NY', zip: '10001', country: 'US', label: 'home',
    })]);
    const two = await addAddress(m, c.id, { line1: 'second' });
    expect(two.addresses.map((a: any) => [a.line1, a.is_default])).toEqual([['second', false], ['first', true]]);
    const ship = await addAddress(m, c.id, { type: 'SHIPPING', line1: 'dock' });
    expect(ship.addresses.find((a: any) => a.line1 === 'dock')).toMatchObject({ type: 'SHIPPING', is_default: true });
    const bad = await stack.http.post(`/v1/customers/${c.id}/addresses`).set(bearer(m.secretKey)).send({ zip: 12345 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields[0].path).toBe('body/zip');
  });

  it('marks an address primary and clears the previous default of that type only', async () => {
    const m = await createMerchant(stack);
    const c = await createCustomer(m, { addresses: [{ line1: 'a' }, { line1: 'b' }, { type: 'SHIPPING', line1: 's' }] });
    const b = c.addresses.find((a: any) => a.line1 === 'b');
    const res = await stack.http.post(`/v1/customers/${c.id}/addresses/${b.id}/mark-primary`).set(bearer(m.secretKey)).send({});
    expect(res.status).toBe(200);
    expect(res.body.message).toBe('Address marked primary');
    const state = Object.fromEntries(res.body.data.addresses.map((a: any) => [a.line1, a.is_default]));
    expect(state).toEqual({ a: false, b: true, s: true });
    // Marking the default again changes nothing.
    const again = await stack.http.post(`/v1/customers/${c.id}/addresses/${b.id}/mark-primary`).set(bearer(m.secretKey)).send({});
    expect(again.body.data.addresses.filter((a: any) => a.is_default)).toHaveLength(2);
    const body = await stack.http.post(`/v1/customers/${c.id}/addresses/${b.id}/mark-primary`).set(bearer(m.secretKey)).send({ force: true });
    expect(body.status).toBe(400);
    expect(body.body.error.details.reason).toBe('unknown_field');
  });

  it('answers 404 for an address of another customer, or of another tenant', async () => {
    const m = await createMerchant(stack);
    const other = await createMerchant(stack);
    const c1 = await createCustomer(m, { addresses: [{ line1: 'x' }] });
    const c2 = await createCustomer(m);
    const theirs = await createCustomer(other, { addresses: [{ line1: 'y' }] });
    const a1 = c1.addresses[0].id;
    expect((await stack.http.post(`/v1/customers/${c2.id}/addresses/${a1}/mark-primary`).set(bearer(m.secretKey)).send({})).status).toBe(404);
    expect((await stack.http.delete(`/v1/customers/${c2.id}/addresses/${a1}`).set(bearer(m.secretKey))).status).toBe(404);
    expect((await stack.http.post(`/v1/customers/${c1.id}/addresses/addr_nope/mark-primary`).set(bearer(m.secretKey)).send({})).status).toBe(404);
    const cross = await stack.http.post(`/v1/customers/${theirs.id}/addresses/${theirs.addresses[0].id}/mark-primary`).set(bearer(m.secretKey)).send({});
    expect(cross.status).toBe(404);
    const crossDelete = await stack.http.delete(`/v1/customers/${theirs.id}/addresses/${theirs.addresses[0].id}`).set(bearer(m.token));
    expect(crossDelete.status).toBe(404);
    expect(await stack.db('live.customer_addresses').where({ id: theirs.addresses[0].id }).first()).toBeTruthy();
  });

  it('removes an address and returns the customer without it; a removed default passes to the newest of its type', async () => {
    const m = await createMerchant(stack);
    const c = await createCustomer(m);
    await addAddress(m, c.id, { line1: 'oldest' });
    await addAddress(m, c.id, { line1: 'middle' });
    await addAddress(m, c.id, { line1: 'newest' });
    await addAddress(m, c.id, { type: 'SHIPPING', line1: 'ship' });
    const current = (await stack.http.get(`/v1/customers/${c.id}`).set(bearer(m.secretKey))).body.data;
    const byLine = Object.fromEntries(current.addresses.map((a: any) => [a.line1, a]));
    expect(byLine.oldest.is_default).toBe(true);

    const res = await stack.http.delete(`/v1/customers/${c.id}/addresses/${byLine.oldest.id}`).set(bearer(m.secretKey));
    expect(res.status).toBe(200);
    const after = Object.fromEntries(res.body.data.addresses.map((a: any) => [a.line1, a.is_default]));
    expect(after).toEqual({ newest: true, middle: false, ship: true });
    expect(await stack.db('live.customer_addresses').where({ id: byLine.oldest.id }).first()).toBeUndefined();

    const nonDefault = await stack.http.delete(`/v1/customers/${c.id}/addresses/${byLine.middle.id}`).set(bearer(m.secretKey));
    expect(nonDefault.body.data.addresses.map((a: any) => [a.line1, a.is_default])).toEqual([['ship', true], ['newest', true]]);
    const gone = await stack.http.delete(`/v1/customers/${c.id}/addresses/${byLine.middle.id}`).set(bearer(m.secretKey));
    expect(gone.status).toBe(404);
  });

  it('keeps exactly one default when ten mark-primary calls race on different addresses', async () => {
    const m = await createMerchant(stack);
    const c = await createCustomer(m, { addresses: Array.from({ length: 10 }, (_, i) => ({ line1: `street ${i}` })) });
    const results = await Promise.all(c.addresses.map((a: any) =>
      stack.http.post(`/v1/customers/${c.id}/addresses/${a.id}/mark-primary`).set(bearer(m.secretKey)).send({})));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    const defaults = await stack.db('live.customer_addresses').where({ customer_id: c.id, is_default: true });
    expect(defaults).toHaveLength(1);
    const shown = (await stack.http.get(`/v1/customers/${c.id}`).set(bearer(m.secretKey))).body.data.addresses;
    expect(shown.filter((a: any) => a.is_default)).toHaveLength(1);
  });
});

describe('payment methods (card vault)', () => {
  it('stores a card and shows only network, last4, expiry and fingerprint', async () => {
    const m = await createMerchant(stack);
    const c = await createCustomer(m);
    const res = await stack.http.post(`/v1/customers/${c.id}/payment-methods`).set(bearer(m.secretKey))
      .send({ type: 'CARD', card: { ...CARD, holder_name: 'Ada Lovelace' } });
    expect(res.status).toBe(201);
    const pm = res.body.data;
    expect(pm).toMatchObject({
      object: 'payment_method', customer_id: c.id, account_id: m.account.id, type: 'CARD', deleted: false,
      card: { network: 'VISA', last4: '4242', exp_month: 12, exp_year: CARD.exp_year, country: null, holder_name: 'Ada Lovelace' },
    });
    expect(pm.id).toMatch(/^pm_[0-9A-Z]{26}$/);
    expect(pm.card.fingerprint).toMatch(/^[\w-]{32}$/);
    const text = JSON.stringify(res.body);
    expect(text).not.toContain('4242424242424242');
    expect(text).not.toContain('4242 4242 4242 4242');
    expect(text).not.toMatch(/"cvc"|"number"|123"/);

    const row = await stack.db('live.payment_methods').where({ id: pm.id }).first();
    const stored = JSON.stringify(row);
    expect(stored).not.toContain('4242424242424242');
    expect(stored).not.toContain('"123"');
    expect(row.pan_encrypted).toMatch(/^v2\.k0\./);
    // A card saved on its own keeps no CVC: no authorization is about to use it (PCI DSS 3.3).
    expect(row.cvc_encrypted).toBeNull();
    expect(row.card_fingerprint).toBe(stack.deps.vault.fingerprint('4242424242424242'));

    // The same card again has the same fingerprint.
    const again = await stack.http.post(`/v1/customers/${c.id}/payment-methods`).set(bearer(m.secretKey)).send({ type: 'CARD', card: CARD });
    expect(again.body.data.card.fingerprint).toBe(pm.card.fingerprint);
    expect(again.body.data.id).not.toBe(pm.id);
  });

  it('tells each network from the BIN', async () => {
    const m = await createMerchant(stack);
    const c = await createCustomer(m);
    const cases: [string, string, string][] = [
      ['5555 5555 5555 4444', '123', 'MASTERCARD'], ['3782 822463 10005', '1234', 'AMEX'], ['6011 1111 1111 1117', '123', 'DISCOVER'],
      ['3530 1113 3330 0000', '123', 'UNKNOWN'],
    ];
    for (const [number, cvc, network] of cases) {
      const res = await stack.http.post(`/v1/customers/${c.id}/payment-methods`).set(bearer(m.secretKey)).send({ type: 'CARD', card: { ...CARD, number, cvc } });
      expect(res.status, number).toBe(201);
      expect(res.body.data.card.network).toBe(network);
    }
  });

  it('refuses bad cards with 400 invalid_card and the field path, never echoing the number', async () => {
    const m = await createMerchant(stack);
    const c = await createCustomer(m);
    const lastYear = new Date().getUTCFullYear() - 1;
    const cases: [object, string][] = [
      [{ number: '4242 4242 4242 4241' }, 'body/card/number'],
      [{ number: '4242-4242-4242-4242' }, 'body/card/number'],
      [{ number: '42424242424' }, 'body/card/number'],
      [{ number: '4'.repeat(20) }, 'body/card/number'],
      [{ exp_year: lastYear }, 'body/card/exp_year'],
      [{ exp_month: 13 }, 'body/card/exp_month'],
      [{ cvc: '12' }, 'body/card/cvc'],
    ];
    for (const [change, path] of cases) {
      const res = await stack.http.post(`/v1/customers/${c.id}/payment-methods`).set(bearer(m.secretKey)).send({ type: 'CARD', card: { ...CARD, ...change } });
      expect(res.status, JSON.stringify(change)).toBe(400);
      expect(res.body.error.details.reason).toBe('invalid_card');
      expect(res.body.error.details.fields.map((f: any) => f.path)).toContain(path);
      expect(JSON.stringify(res.body)).not.toContain('4242');
    }
    const shape: [object, string, string][] = [
      [{ type: 'CARD' }, 'validation_failed', 'body/card'],
      [{ type: 'BANK', card: CARD }, 'validation_failed', 'body/type'],
      [{ type: 'CARD', card: { ...CARD, number: 4242424242424242 } }, 'validation_failed', 'body/card/number'],
      [{ type: 'CARD', card: { ...CARD, pin: '0000' } }, 'unknown_field', 'body/card/pin'],
    ];
    for (const [body, reason, path] of shape) {
      const res = await stack.http.post(`/v1/customers/${c.id}/payment-methods`).set(bearer(m.secretKey)).send(body);
      expect(res.status).toBe(400);
      expect(res.body.error.details.reason).toBe(reason);
      expect(res.body.error.details.fields.map((f: any) => f.path)).toContain(path);
      expect(JSON.stringify(res.body)).not.toContain('4242');
    }
    expect(await stack.db('live.payment_methods').where({ customer_id: c.id })).toHaveLength(0);
  });

  it('embeds payment methods on request, and keeps the card out of idempotency records', async () => {
    const m = await createMerchant(stack);
    const c = await createCustomer(m);
    const created = await stack.http.post(`/v1/customers/${c.id}/payment-methods`).set(bearer(m.secretKey))
      .set('Idempotency-Key', unique('idem')).send({ type: 'CARD', card: CARD });
    expect(created.status).toBe(201);
    const plain = await stack.http.get(`/v1/customers/${c.id}`).set(bearer(m.secretKey));
    expect(plain.body.data.payment_methods).toBeUndefined();
    const withPms = await stack.http.get(`/v1/customers/${c.id}?include_payment_methods=true`).set(bearer(m.secretKey));
    expect(withPms.body.data.payment_methods).toEqual([created.body.data]);
    expect(JSON.stringify(withPms.body)).not.toContain('4242424242424242');
    const records = await stack.db('core.idempotency_keys').where('scope', 'like', `acct:${m.account.id}|%`);
    expect(records).toHaveLength(1);
    expect(JSON.stringify(records)).not.toContain('4242424242424242');
  });

  it('loads a card just in time for authorization, wipes the CVC after first use, and forgets deleted cards', async () => {
    const m = await createMerchant(stack);
    const c = await createCustomer(m);
    const pm = (await stack.http.post(`/v1/customers/${c.id}/payment-methods`).set(bearer(m.secretKey)).send({ type: 'CARD', card: CARD })).body.data;

    // Only for a payment of the card's own customer, in the card's account and environment.
    const use = { paymentMethodId: pm.id, accountId: m.account.id, customerId: c.id, paymentId: 'pay_any' };
    expect(await loadCardForAuthorization(stack.db, stack.deps.vault, 'production', use)).toMatchObject({ id: pm.id, cvc: null });
    // As a card saved with a confirm holds it until that confirm's authorization.
    await stack.db('live.payment_methods').where({ id: pm.id }).update({ cvc_encrypted: stack.deps.vault.encrypt('123') });
    const card = await loadCardForAuthorization(stack.db, stack.deps.vault, 'production', use);
    expect(card).toMatchObject({ id: pm.id, customerId: c.id, number: '4242424242424242', cvc: '123', network: 'VISA', last4: '4242', expMonth: 12 });
    expect(await loadCardForAuthorization(stack.db, stack.deps.vault, 'sandbox', use)).toBeUndefined();
    expect(await loadCardForAuthorization(stack.db, stack.deps.vault, 'production', { ...use, customerId: (await createCustomer(m)).id })).toBeUndefined();
    expect(await loadCardForAuthorization(stack.db, stack.deps.vault, 'production', { ...use, customerId: null })).toBeUndefined();
    expect(await loadCardForAuthorization(stack.db, stack.deps.vault, 'production', { ...use, accountId: (await createMerchant(stack)).account.id })).toBeUndefined();

    await wipeCvc(stack.db, 'production', pm.id);
    expect((await loadCardForAuthorization(stack.db, stack.deps.vault, 'production', use))?.cvc).toBeNull();
    expect((await stack.db('live.payment_methods').where({ id: pm.id }).first()).cvc_encrypted).toBeNull();

    const del = await stack.http.delete(`/v1/customers/${c.id}/payment-methods/${pm.id}`).set(bearer(m.secretKey));
    expect(del.status).toBe(200);
    expect(del.body.data).toMatchObject({ id: pm.id, deleted: true, card: { last4: '4242' } });
    expect(await loadCardForAuthorization(stack.db, stack.deps.vault, 'production', use)).toBeUndefined();
    const row = await stack.db('live.payment_methods').where({ id: pm.id }).first();
    expect(row).toMatchObject({ deleted: true, pan_encrypted: '', cvc_encrypted: null });
    expect((await stack.http.get(`/v1/customers/${c.id}?include_payment_methods=true`).set(bearer(m.secretKey))).body.data.payment_methods).toEqual([]);
    expect((await stack.http.delete(`/v1/customers/${c.id}/payment-methods/${pm.id}`).set(bearer(m.secretKey))).status).toBe(404);
  });

  it('answers 404 for cards and customers the caller cannot see, and deletes cards with their customer', async () => {
    const m = await createMerchant(stack);
    const other = await createMerchant(stack);
    const sandbox = await createMerchant(stack, { sandboxOf: m });
    const c = await createCustomer(m);
    const c2 = await createCustomer(m);
    const pm = (await stack.http.post(`/v1/customers/${c.id}/payment-methods`).set(bearer(m.secretKey)).send({ type: 'CARD', card: CARD })).body.data;
    for (const credential of [other.secretKey, other.token, sandbox.secretKey]) {
      expect((await stack.http.post(`/v1/customers/${c.id}/payment-methods`).set(bearer(credential)).send({ type: 'CARD', card: CARD })).status).toBe(404);
      expect((await stack.http.delete(`/v1/customers/${c.id}/payment-methods/${pm.id}`).set(bearer(credential))).status).toBe(404);
    }
    // The card belongs to c, not to c2.
    expect((await stack.http.delete(`/v1/customers/${c2.id}/payment-methods/${pm.id}`).set(bearer(m.secretKey))).status).toBe(404);

    await stack.http.delete(`/v1/customers/${c.id}`).set(bearer(m.secretKey)).expect(200);
    expect(await stack.db('live.payment_methods').where({ id: pm.id }).first()).toMatchObject({ deleted: true, pan_encrypted: '', cvc_encrypted: null });
  });
});
