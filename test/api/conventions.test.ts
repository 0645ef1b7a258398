import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import supertest from 'supertest';
import jwt from 'jsonwebtoken';
import { bearer, createMerchant, Merchant, signToken, startStack, TestStack, unique, TEST_JWT_SECRET } from '../support/stack';
import { createApp } from '../../api/app';
import { defineRoute } from '../../api/route';
import { Obj, Pagination } from '../../resources/schemas';
import { ROUTES } from '../../api/routes';
import { insertApiKey } from '../../db/api-keys';
import { createApiDeps } from '../../api/server';
import { createDb } from '../../db/knex';
import { envTable } from '../../db/environments';

let stack: TestStack;
let merchant: Merchant;
beforeAll(async () => {
  stack = await startStack();
  merchant = await createMerchant(stack);
});
afterAll(async () => { await stack.close(); });

function expectError(res: supertest.Response, status: number, reason: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body).toEqual({
    message: expect.any(String),
    success: false,
    error: { code: status, message: res.body.message, details: expect.objectContaining({ reason }) },
  });
  expect(JSON.stringify(res.body)).not.toMatch(/at .*\.(ts|js):\d+|SELECT|INSERT/);
}

describe('authentication', () => {
  it('answers 401 for every kind of bad credential', async () => {
    const expired = signToken({ sub: 'usr_x', workspace_id: 'ws_x' }, { expiresIn: -10 });
    const badSignature = jwt.sign({ sub: 'usr_x', workspace_id: 'ws_x' }, 'another-secret', { expiresIn: 60 });
    const noExp = jwt.sign({ sub: 'usr_x', workspace_id: 'ws_x' }, TEST_JWT_SECRET);
    const noWorkspace = jwt.sign({ sub: 'usr_x' }, TEST_JWT_SECRET, { expiresIn: 60 });
    const noneAlg = jwt.sign({ sub: 'usr_x', workspace_id: 'ws_x' }, '', { algorithm: 'none' as jwt.Algorithm, expiresIn: 60 });
    const cases: [Record<string, string>, string][] = [
      [{}, 'missing_authorization'],
      [{ Authorization: 'Basic dXNlcjpwYXNz' }, 'invalid_token'],
      [{ Authorization: 'Bearer' }, 'invalid_token'],
      [{ Authorization: 'Bearer not.a.jwt' }, 'invalid_token'],
      [bearer(badSignature), 'invalid_token'],
      [bearer(expired), 'token_expired'],
      [bearer(noExp), 'invalid_token'],
      [bearer(noWorkspace), 'invalid_token'],
      [bearer(noneAlg), 'invalid_token'],
      [bearer('sk_test_000000000000000000000000000000000000000'), 'invalid_api_key'],
      [bearer('pk_live_000000000000000000000000000000000000000'), 'invalid_api_key'],
    ];
    for (const [headers, reason] of cases) {
      const res = await stack.http.get('/v1/accounts').set(headers);
      expectError(res, 401, reason);
    }
  });

  it('refuses a deleted, revoked or expired key, and a secret key presented as publishable', async () => {
    const m = await createMerchant(stack);
    const make = async (patch: object) => {
      const { row, plaintext } = await insertApiKey(stack.db, stack.config.apiKeyPepper, {
        accountId: m.account.id, environment: 'production', type: 'SECRET', name: 't', managed: false, permissions: { account: ['read'] },
      });
      if (Object.keys(patch).length) await stack.db('core.api_keys').where({ id: row.id }).update(patch);
      return plaintext;
    };
    expectError(await stack.http.get('/v1/accounts').set(bearer(await make({ deleted: true }))), 401, 'invalid_api_key');
    expectError(await stack.http.get('/v1/accounts').set(bearer(await make({ status: 'REVOKED' }))), 401, 'invalid_api_key');
    expectError(await stack.http.get('/v1/accounts').set(bearer(await make({ expires_at: new Date(Date.now() - 1000) }))), 401, 'invalid_api_key');
    const valid = await make({});
    expect((await stack.http.get('/v1/accounts').set(bearer(valid))).status).toBe(200);
    expectError(await stack.http.get('/v1/accounts').set(bearer(valid.replace('sk_', 'pk_'))), 401, 'invalid_api_key');
  });

  it('records when and from where a key was last used', async () => {
    const m = await createMerchant(stack);
    await stack.http.get('/v1/accounts').set(bearer(m.secretKey)).expect(200);
    await expect.poll(async () => (await stack.db('core.api_keys').where({ account_id: m.account.id, type: 'SECRET' }).first()).last_used_at).not.toBeNull();
  });
});

describe('authorization', () => {
  it('answers 403 insufficient_permissions with the permission required', async () => {
    const { plaintext } = await insertApiKey(stack.db, stack.config.apiKeyPepper, {
      accountId: merchant.account.id, environment: 'production', type: 'SECRET', name: 'narrow', managed: false, permissions: { payment: ['read'] },
    });
    const res = await stack.http.get(`/v1/accounts/${merchant.account.id}`).set(bearer(plaintext));
    expectError(res, 403, 'insufficient_permissions');
    expect(res.body.error.details.required).toBe('account:read');
  });

  it('gives a VIEWER reads only', async () => {
    const viewer = unique('usr');
    await stack.db('core.account_memberships').insert({ id: unique('mem'), account_id: merchant.account.id, user_id: viewer, role: 'VIEWER' });
    const token = signToken({ sub: viewer, workspace_id: merchant.workspaceId });
    expect((await stack.http.get(`/v1/accounts/${merchant.account.id}`).set(bearer(token))).status).toBe(200);
  });

  it('keeps publishable keys to the payment routes', async () => {
    expectError(await stack.http.get('/v1/accounts').set(bearer(merchant.publishableKey)), 403, 'publishable_key_not_allowed');
  });

  it('answers 403 account_access_denied when a key names another account', async () => {
    const other = await createMerchant(stack);
    const app = createApp(stack.deps, [accountScopedRoute]);
    const res = await supertest(app.callback()).get(`/v1/scoped?account_id=${other.account.id}`).set(bearer(merchant.secretKey));
    expectError(res, 403, 'account_access_denied');
    const own = await supertest(app.callback()).get('/v1/scoped').set(bearer(merchant.secretKey));
    expect(own.body.data).toEqual({ account_id: merchant.account.id, environment: 'production' });
  });
});

// account-scoped (it has a permission): the route layer adds account_id and hands it to access.
const accountScopedRoute = defineRoute({
  method: 'get', path: '/scoped', tag: 'Test', summary: 'test', permission: 'account:read', message: 'ok',
  async handler({ access }) {
    const scope = await access.forAccount();
    return { data: { account_id: scope.account.id, environment: scope.environment } };
  },
});

describe('envelopes and errors', () => {
  const listRoute = defineRoute({
    method: 'get', path: '/things', tag: 'Test', summary: 'test', permission: null, message: 'Things', envelope: 'paginated',
    query: Obj({ ...Pagination }),
    async handler({ query }) {
      const { page = 1, limit = 10 } = query;
      return { data: Array.from({ length: Math.max(0, Math.min(limit, 23 - (page - 1) * limit)) }, (_, i) => ({ object: 'thing', n: (page - 1) * limit + i })), total: 23 };
    },
  });
  const boomRoute = defineRoute({
    method: 'post', path: '/boom', tag: 'Test', summary: 'test', permission: null, message: 'never',
    async handler() { throw new Error('SELECT secret FROM core.api_keys -- internal detail'); },
  });
  let app: ReturnType<typeof supertest>;
  beforeAll(() => { app = supertest(createApp(stack.deps, [...ROUTES, listRoute, boomRoute]).callback()); });

  it('paginates with total, page, limit and pages', async () => {
    const res = await app.get('/v1/things?page=3&limit=10').set(bearer(merchant.token));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ message: 'Things', success: true, total: 23, page: 3, limit: 10, pages: 3 });
    expect(res.body.data).toHaveLength(3);
    const defaults = await app.get('/v1/things').set(bearer(merchant.token));
    expect(defaults.body).toMatchObject({ page: 1, limit: 10, pages: 3 });
  });

  it('validates page and limit exactly', async () => {
    for (const q of ['page=0', 'page=-1', 'page=1.5', 'page=abc', 'page=', 'limit=0', 'limit=101', 'limit=2.5', 'limit=ten']) {
      const res = await app.get(`/v1/things?${q}`).set(bearer(merchant.token));
      expectError(res, 400, 'validation_failed');
      expect(res.body.error.details.fields[0].path).toMatch(/^query\/(page|limit)$/);
    }
    expectError(await app.get('/v1/things?offset=5').set(bearer(merchant.token)), 400, 'unknown_field');
  });

  it('hides internals behind a 500 internal_error', async () => {
    const res = await app.post('/v1/boom').set(bearer(merchant.token)).send({});
    expectError(res, 500, 'internal_error');
    expect(JSON.stringify(res.body)).not.toContain('core.api_keys');
  });

  it('carries X-Request-Id, echoing a client one', async () => {
    const mine = await stack.http.get('/v1/accounts').set(bearer(merchant.token)).set('X-Request-Id', 'client-req-42');
    expect(mine.headers['x-request-id']).toBe('client-req-42');
    const generated = await stack.http.get('/v1/accounts').set(bearer(merchant.token));
    expect(generated.headers['x-request-id']).toMatch(/^req_/);
  });

  it('answers unknown routes and methods with the envelope', async () => {
    expectError(await stack.http.get('/v1/nowhere').set(bearer(merchant.token)), 404, 'route_not_found');
    expectError(await stack.http.delete('/v1/accounts').set(bearer(merchant.token)), 405, 'method_not_allowed');
  });

  it('routes by resource: exact paths, a trailing slash, unknown paths under a known resource', async () => {
    // Each resource has its own router (api/app.ts).
    const [plain, slash] = await Promise.all([
      stack.http.get('/v1/accounts').set(bearer(merchant.token)),
      stack.http.get('/v1/accounts/').set(bearer(merchant.token)),
    ]);
    expect([plain.status, slash.status]).toEqual([200, 200]);
    expect(slash.body.data).toEqual(plain.body.data);
    // Paths are matched with their case: routers match without it by default, and their prefix
    // middleware (authentication) did not follow, so /V1/… reached the route unauthenticated and got 500.
    for (const path of ['/V1/accounts', '/v1/Accounts', '/V1/openapi.json']) {
      expectError(await stack.http.get(path).set(bearer(merchant.token)), 404, 'route_not_found');
    }
    // A path no route has, under a resource that exists: 404 before authentication, as any unknown path.
    expectError(await stack.http.get('/v1/accounts/acct_x/nowhere').set(bearer(merchant.token)), 404, 'route_not_found');
    expectError(await stack.http.get('/v1/accounts/acct_x/nowhere'), 404, 'route_not_found');
    expectError(await stack.http.get('/v1/nowhere'), 404, 'route_not_found');
    // A known route without credentials is authenticated (401), whichever router holds it.
    expectError(await stack.http.get('/v1/accounts'), 401, 'missing_authorization');
    // The open routes under /v1 are not a resource: the OpenAPI document, and 405 with its Allow.
    expect((await stack.http.get('/v1/openapi.json')).status).toBe(200);
    const post = await stack.http.post('/v1/openapi.json');
    expectError(post, 405, 'method_not_allowed');
    expect(post.headers.allow).toContain('GET');
  });

  it('serves liveness, readiness and the OpenAPI document without credentials', async () => {
    expect((await stack.http.get('/healthz')).body).toMatchObject({ success: true });
    expect((await stack.http.get('/readyz')).body).toMatchObject({ success: true, data: { database: true, temporal: true } });
    const doc = (await stack.http.get('/v1/openapi.json')).body;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.paths['/v1/accounts'].post.requestBody.content['application/json'].schema.required).toContain('name');
    // Exactly the statuses creating an account can answer (no path resource, so no 404).
    expect(Object.keys(doc.paths['/v1/accounts'].post.responses).sort()).toEqual(['201', '400', '401', '403', '409', '415', '422', '429', '500', '503']);
  });
});

describe('bad input never yields a 5xx', () => {
  const post = (body: string | Buffer, type = 'application/json') =>
    stack.http.post('/v1/accounts').set(bearer(merchant.token)).set('Content-Type', type).send(body);

  it('answers malformed JSON with invalid_json', async () => {
    for (const body of ['{"name":', '{name: 1}', 'nul', '"just a string"', '42', '{"a":1}}']) {
      expectError(await post(body), 400, 'invalid_json');
    }
  });

  it('answers a body over 1 MiB with payload_too_large', async () => {
    expectError(await post(JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) })), 400, 'payload_too_large');
  });

  it('answers non-JSON bodies with 415', async () => {
    expectError(await post('name=x', 'application/x-www-form-urlencoded'), 415, 'unsupported_media_type');
  });

  it('answers wrong shapes with validation errors', async () => {
    expectError(await post('[]'), 400, 'validation_failed');
    expectError(await post('null'), 400, 'invalid_json');
    expectError(await post(JSON.stringify({ name: 'x', metadata: { k: 1 } })), 400, 'validation_failed');
    expectError(await post(JSON.stringify({ name: 'x', metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) })), 400, 'validation_failed');
    expectError(await post(JSON.stringify({ name: 'x', metadata: { ['k'.repeat(41)]: 'v' } })), 400, 'validation_failed');
    expectError(await post(JSON.stringify({ name: 'x', nested: { a: { b: { c: [1, 2, { d: null }] } } } })), 400, 'unknown_field');
  });

  it('names the value a constant field must have', async () => {
    const res = await stack.http.post('/v1/payments').set(bearer(merchant.secretKey)).send({
      amount: 100, currency: 'USD', confirm: true, payment_method: { type: 'card', card: { number: '4242424242424242', exp_month: 12, exp_year: 2030, cvc: '123' } },
    });
    expectError(res, 400, 'validation_failed');
    expect(res.body.error.details.fields).toContainEqual({ path: 'body/payment_method/type', message: 'must be "CARD"' });
  });

  it('answers odd ids with 404, not 500', async () => {
    for (const id of ['x', 'acct_', "acct_'; DROP TABLE core.accounts; --", '%00', 'a'.repeat(99), '..%2F..%2Fetc']) {
      const res = await stack.http.get(`/v1/accounts/${encodeURIComponent(id)}`).set(bearer(merchant.token));
      expect(res.status, id).toBeLessThan(500);
    }
  });
});

describe('dependencies down', () => {
  it('answers 503 database_unavailable with Retry-After when Postgres is unreachable', async () => {
    const db = createDb('postgres://postgres@127.0.0.1:1/nowhere', { max: 1 });
    const deps = createApiDeps(db, stack.config, stack.config.temporal.address!);
    const server = createServer(createApp(deps).callback());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const http = supertest(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      const res = await http.get('/v1/accounts').set(bearer(merchant.secretKey));
      expectError(res, 503, 'database_unavailable');
      expect(res.headers['retry-after']).toBe('5');
      expect((await http.get('/readyz')).status).toBe(503);
    } finally {
      server.close();
      await db.destroy();
      (await deps.temporal()).connection.close().catch(() => {});
    }
  });
});

describe('idempotency', () => {
  const create = (key: string, body: object, token = merchant.token) =>
    stack.http.post('/v1/accounts').set(bearer(token)).set('Idempotency-Key', key).send(body);

  it('replays the first response for a retry with the same key and body', async () => {
    const key = unique('idem');
    const first = await create(key, { name: 'Once' });
    const again = await create(key, { name: 'Once' });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(again.body).toEqual(first.body);
    expect(await stack.db('core.accounts').where({ name: 'Once', user_id: merchant.userId }).count().first()).toEqual({ count: 1 });
    // The stored reply holds the new keys' plaintext, so it is kept sealed, never readable in the table.
    const stored = await stack.db('core.idempotency_keys').where({ key }).first();
    const plaintext = first.body.data.api_keys[0].key as string;
    expect(JSON.stringify(stored)).not.toContain(plaintext);
    expect(again.body.data.api_keys[0].key).toBe(plaintext);
  });

  it('refuses the same key with another body (422) and an overlong key (400)', async () => {
    const key = unique('idem');
    await create(key, { name: 'A' }).expect(201);
    expectError(await create(key, { name: 'B' }), 422, 'idempotency_key_reused');
    expectError(await create('k'.repeat(256), { name: 'A' }), 400, 'validation_failed');
  });

  it('stores client errors too, so a retried bad request gets the same answer', async () => {
    const key = unique('idem');
    const first = await create(key, { name: '' });
    const again = await create(key, { name: '' });
    expect(first.status).toBe(400);
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });

  it('scopes keys to the caller', async () => {
    const key = unique('idem');
    const other = await createMerchant(stack);
    const mine = await create(key, { name: 'Scoped' });
    const theirs = await create(key, { name: 'Scoped' }, other.token);
    expect(theirs.status).toBe(201);
    expect(theirs.body.data.id).not.toBe(mine.body.data.id);
  });

  it('runs one request when ten arrive at once with one key', async () => {
    const key = unique('idem');
    const name = unique('Concurrent');
    const results = await Promise.all(Array.from({ length: 10 }, () => create(key, { name })));
    const statuses = results.map((r) => r.status);
    expect(statuses.every((s) => s === 201 || s === 409), statuses.join()).toBe(true);
    for (const r of results.filter((r) => r.status === 409)) expect(r.body.error.details.reason).toBe('idempotency_key_in_use');
    const created = results.filter((r) => r.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((r) => r.body.data.id)).size).toBe(1);
    expect(await stack.db('core.accounts').where({ name }).count().first()).toEqual({ count: 1 });
  });

  it('expires keys after 24 hours', async () => {
    const key = unique('idem');
    const first = await create(key, { name: 'Old' });
    await stack.db('core.idempotency_keys').where({ key }).update({ expires_at: new Date(Date.now() - 1000) });
    const later = await create(key, { name: 'Old' });
    expect(later.status).toBe(201);
    expect(later.body.data.id).not.toBe(first.body.data.id);
  });
});

describe('idempotency and authorization', () => {
  // A stored reply is only ever given to a caller allowed to make the request, under the credential
  // that made it; refusals are never stored.
  const post = (path: string, credential: string, key: string, body: object) =>
    stack.http.post(path).set(bearer(credential)).set('Idempotency-Key', key).send(body);
  const SECRET = /(sk|pk)_(live|test)_[0-9A-Za-z]{40}|whsec_/;

  async function customKey(m: Merchant, permissions: Record<string, string[]>): Promise<string> {
    const res = await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'custom', permissions });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data.key;
  }
  async function setRole(m: Merchant, userId: string, role: string) {
    await stack.db('core.account_memberships').insert({ id: unique('mem'), account_id: m.account.id, user_id: userId, role })
      .onConflict(['account_id', 'user_id']).merge(['role']);
  }

  it('does not replay a new secret key to a read-only or publishable key that learnt the Idempotency-Key', async () => {
    const m = await createMerchant(stack);
    const key = unique('idem');
    const first = await post('/v1/api-keys', m.secretKey, key, { name: 'backend' });
    expect(first.status).toBe(201);
    expect(first.body.data.key).toMatch(/^sk_live_/);

    const readOnly = await customKey(m, { account: ['read'], 'account:api:key': ['read'], payment: ['read'] });
    const replay = await post('/v1/api-keys', readOnly, key, { name: 'backend' });
    expectError(replay, 403, 'insufficient_permissions');
    expect(replay.body.error.details.required).toBe('account:api:key:create');
    expect(replay.headers['idempotent-replayed']).toBeUndefined();
    expect(JSON.stringify(replay.body)).not.toMatch(SECRET);
    const publishable = await post('/v1/api-keys', m.publishableKey, key, { name: 'backend' });
    expectError(publishable, 403, 'publishable_key_not_allowed');
    expect(JSON.stringify(publishable.body)).not.toMatch(SECRET);
  });

  it('does not replay a webhook signing secret to a read-only key', async () => {
    const m = await createMerchant(stack);
    const key = unique('idem');
    const first = await post('/v1/webhook-endpoints', m.secretKey, key, { url: 'http://127.0.0.1:9/hook' });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.data.secret).toMatch(/^whsec_/);
    const replay = await post('/v1/webhook-endpoints', await customKey(m, { webhook: ['read'] }), key, { url: 'http://127.0.0.1:9/hook' });
    expectError(replay, 403, 'insufficient_permissions');
    expect(JSON.stringify(replay.body)).not.toMatch(SECRET);
  });

  it('scopes keys to the credential: another key of the same account runs the request afresh', async () => {
    const m = await createMerchant(stack);
    const key = unique('idem');
    const mine = await post('/v1/customers', m.secretKey, key, { name: 'Ada' });
    const theirs = await post('/v1/customers', await customKey(m, { customer: ['write'] }), key, { name: 'Ada' });
    expect(mine.status).toBe(201);
    expect(theirs.status).toBe(201);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.body.data.id).not.toBe(mine.body.data.id);
  });

  it('does not let a refusal poison the key for the rightful caller who uses it next', async () => {
    const m = await createMerchant(stack);
    const key = unique('idem');
    expect((await post('/v1/api-keys', await customKey(m, { 'account:api:key': ['read'] }), key, { name: 'backend' })).status).toBe(403);
    expect((await post('/v1/api-keys', m.publishableKey, key, { name: 'backend' })).status).toBe(403);
    const owner = await post('/v1/api-keys', m.secretKey, key, { name: 'backend' });
    expect(owner.status, JSON.stringify(owner.body)).toBe(201);
    expect(owner.headers['idempotent-replayed']).toBeUndefined();
    expect(owner.body.data.key).toMatch(/^sk_live_/);
  });

  it('does not store a 403 from the handler\'s own check, so the caller may retry once allowed', async () => {
    // The caller names the customer's account (a token must, with an Idempotency-Key), where it is a
    // VIEWER: refused, and the refusal is not stored.
    const m = await createMerchant(stack);
    const elsewhere = await createMerchant(stack);
    await setRole(m, elsewhere.userId, 'VIEWER');
    const customer = (await stack.http.post('/v1/customers').set(bearer(m.secretKey)).send({ name: 'Ada' })).body.data;
    const key = unique('idem');
    const denied = await post(`/v1/customers/${customer.id}/addresses?account_id=${m.account.id}`, elsewhere.token, key, { city: 'Paris' });
    expectError(denied, 403, 'insufficient_permissions');
    expect(await stack.db('core.idempotency_keys').where({ key })).toEqual([]);

    await setRole(m, elsewhere.userId, 'ADMIN');
    const allowed = await post(`/v1/customers/${customer.id}/addresses?account_id=${m.account.id}`, elsewhere.token, key, { city: 'Paris' });
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(201);
    expect(allowed.headers['idempotent-replayed']).toBeUndefined();
  });

  it('asks a token for the account it acts on before consulting a key, so a replay cannot outlive the membership', async () => {
    const m = await createMerchant(stack);
    const customer = (await stack.http.post('/v1/customers').set(bearer(m.secretKey)).send({ name: 'Ada' })).body.data;
    const res = await post(`/v1/customers/${customer.id}/addresses`, m.token, unique('idem'), { city: 'Paris' });
    expectError(res, 400, 'validation_failed');
    expect(res.body.error.details.fields).toEqual([{ path: 'query/account_id', message: 'is required with an Idempotency-Key when authenticating with a token' }]);
  });

  it('never stores a 401', async () => {
    const key = unique('idem');
    expectError(await post('/v1/customers', 'sk_live_000000000000000000000000000000000000000', key, { name: 'x' }), 401, 'invalid_api_key');
    expect(await stack.db('core.idempotency_keys').where({ key })).toEqual([]);
  });

  it('is not replayed to its own caller once that caller lost the permission', async () => {
    const m = await createMerchant(stack);
    const admin = unique('usr');
    await setRole(m, admin, 'ADMIN');
    const token = signToken({ sub: admin, workspace_id: m.workspaceId });
    const key = unique('idem');
    const path = `/v1/api-keys?account_id=${m.account.id}`;
    const first = await post(path, token, key, { name: 'admin key' });
    expect(first.status).toBe(201);
    expect((await post(path, token, key, { name: 'admin key' })).headers['idempotent-replayed']).toBe('true');

    await setRole(m, admin, 'VIEWER');
    const after = await post(path, token, key, { name: 'admin key' });
    expectError(after, 403, 'insufficient_permissions');
    expect(after.headers['idempotent-replayed']).toBeUndefined();
    expect(JSON.stringify(after.body)).not.toContain(first.body.data.key);
  });
});

describe('environments', () => {
  it('keeps live and sandbox rows in separate repositories', async () => {
    const sandbox = await createMerchant(stack, { sandboxOf: merchant });
    const id = unique('cus');
    await stack.db(envTable('sandbox', 'customers')).insert({ id, account_id: sandbox.account.id, name: 'Sandy' });
    expect(await stack.db(envTable('sandbox', 'customers')).where({ id }).first()).toMatchObject({ name: 'Sandy' });
    expect(await stack.db(envTable('production', 'customers')).where({ id }).first()).toBeUndefined();
    const app = createApp(stack.deps, [accountScopedRoute]);
    const res = await supertest(app.callback()).get('/v1/scoped').set(bearer(sandbox.secretKey));
    expect(res.body.data.environment).toBe('sandbox');
  });
});
