import { generateKeyPairSync } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer, createMerchant, signSystemToken, signToken, startStack, TEST_JWT_SECRET, TEST_SYSTEM_JWT_SECRET, TestStack, unique,
} from '../support/stack';

// The system actor may do what no merchant may (register payment providers, act on every account), so
// its tokens come from a key of its own: whoever can sign user tokens cannot mint one.
const provider = () => ({ name: 'Sandbox processor', identifier: 'sandbox' });
const claims = () => ({ sub: unique('usr_sys'), workspace_id: unique('ws_sys') });
/** A platform token's claims: no workspace (the only system token that registers payment providers). */
const platformClaims = () => ({ sub: unique('usr_sys') });

function expectInvalidToken(res: supertest.Response) {
  expect(res.status, JSON.stringify(res.body)).toBe(401);
  expect(res.body.error.details.reason).toBe('invalid_token');
}

describe('system actor tokens (HS256)', () => {
  let stack: TestStack;
  beforeAll(async () => { stack = await startStack(); });
  afterAll(async () => { await stack.close(); });

  it('are accepted when signed with SYSTEM_JWT_SECRET', async () => {
    const res = await stack.http.post('/v1/payment-providers').set(bearer(signSystemToken(platformClaims()))).send(provider());
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect((await stack.http.get('/v1/accounts').set(bearer(signSystemToken(claims())))).status).toBe(200);
  });

  it('without a workspace are the platform\'s: still refused from the users\' key, and without sub or exp', async () => {
    const forged = jwt.sign({ ...platformClaims(), actor_type: 'system' }, TEST_JWT_SECRET, { algorithm: 'HS256', expiresIn: 600 });
    expectInvalidToken(await stack.http.post('/v1/payment-providers').set(bearer(forged)).send(provider()));
    // A user token must still name its workspace.
    expectInvalidToken(await stack.http.get('/v1/accounts').set(bearer(jwt.sign(platformClaims(), TEST_JWT_SECRET, { algorithm: 'HS256', expiresIn: 600 }))));
    const noSub = jwt.sign({ actor_type: 'system' }, TEST_SYSTEM_JWT_SECRET, { algorithm: 'HS256', expiresIn: 600 });
    const noExp = jwt.sign({ ...platformClaims(), actor_type: 'system' }, TEST_SYSTEM_JWT_SECRET, { algorithm: 'HS256' });
    const emptyWorkspace = signSystemToken({ ...platformClaims(), workspace_id: '' });
    for (const token of [noSub, noExp, emptyWorkspace]) expectInvalidToken(await stack.http.post('/v1/payment-providers').set(bearer(token)).send(provider()));
  });

  it('without a workspace act on the payment providers only, and a workspace\'s system token registers none', async () => {
    const platform = bearer(signSystemToken(platformClaims()));
    expect((await stack.http.get('/v1/payment-providers').set(platform)).status).toBe(200);
    for (const res of [
      await stack.http.get('/v1/accounts').set(platform),
      await stack.http.post('/v1/accounts').set(platform).send({ name: 'Shop', country: 'US', currency: 'USD', timezone: 'UTC' }),
    ]) {
      expect(res.status, JSON.stringify(res.body)).toBe(403);
      expect(res.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'workspace_token' });
    }
    const workspace = await stack.http.post('/v1/payment-providers').set(bearer(signSystemToken(claims()))).send(provider());
    expect(workspace.status, JSON.stringify(workspace.body)).toBe(403);
    expect(workspace.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'platform_token' });
  });

  it('act on every account of their workspace and on no other workspace\'s', async () => {
    const m = await createMerchant(stack);
    const customer = (await stack.http.post('/v1/customers').set(bearer(m.secretKey)).send({ name: 'c', email: 'c@example.com' })).body.data;
    const ours = signSystemToken({ sub: unique('usr_sys'), workspace_id: m.workspaceId });
    const foreign = signSystemToken(claims());

    expect((await stack.http.get(`/v1/accounts/${m.account.id}`).set(bearer(ours))).status).toBe(200);
    expect((await stack.http.get(`/v1/customers/${customer.id}`).set(bearer(ours))).status).toBe(200);
    const key = await stack.http.post(`/v1/api-keys?account_id=${m.account.id}`).set(bearer(ours)).send({ name: 'operator' });
    expect(key.status, JSON.stringify(key.body)).toBe(201);

    const refused = [
      ['GET', `/v1/accounts/${m.account.id}`, 404, 'not_found'],
      ['GET', `/v1/customers/${customer.id}`, 404, 'not_found'],
      ['GET', `/v1/customers/${customer.id}?account_id=${m.account.id}`, 403, 'account_access_denied'],
      ['GET', `/v1/api-keys?account_id=${m.account.id}`, 403, 'account_access_denied'],
      ['POST', `/v1/api-keys?account_id=${m.account.id}`, 403, 'account_access_denied', { name: 'stolen' }],
      ['POST', `/v1/account-memberships?account_id=${m.account.id}`, 403, 'account_access_denied', { user_id: unique('usr'), role: 'OWNER' }],
      ['POST', `/v1/accounts?sandbox_mode=true&prod_account_id=${m.account.id}`, 403, 'account_access_denied', { name: 'Sandbox' }],
    ] as const;
    for (const [method, path, status, reason, body] of refused) {
      const req = method === 'GET' ? stack.http.get(path) : stack.http.post(path).send(body);
      const res = await req.set(bearer(foreign));
      expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(status);
      expect(res.body.error.details.reason).toBe(reason);
    }
    expect((await stack.http.get('/v1/accounts').set(bearer(foreign))).body.data).toEqual([]);
    // Nothing was made for the foreign token: the one key above, no membership beyond the owner's, no sandbox.
    const keys = await stack.http.get('/v1/api-keys').set(bearer(m.secretKey));
    expect(keys.body.data.map((k: { name: string }) => k.name)).not.toContain('stolen');
    expect(await stack.db('core.account_memberships').where({ account_id: m.account.id }).count('* as n').first()).toEqual({ n: 1 });
    expect(await stack.db('core.accounts').where({ prod_account_id: m.account.id }).count('* as n').first()).toEqual({ n: 0 });
  });

  it('are refused with 401 invalid_token when signed with JWT_SECRET (the users\' key)', async () => {
    const forged = jwt.sign({ ...claims(), actor_type: 'system' }, TEST_JWT_SECRET, { algorithm: 'HS256', expiresIn: 600 });
    expectInvalidToken(await stack.http.post('/v1/payment-providers').set(bearer(forged)).send(provider()));
    expectInvalidToken(await stack.http.get('/v1/payment-providers').set(bearer(forged)));
  });

  it('the system key makes no user tokens: a user token signed with SYSTEM_JWT_SECRET is refused', async () => {
    const user = jwt.sign(claims(), TEST_SYSTEM_JWT_SECRET, { algorithm: 'HS256', expiresIn: 600 });
    const explicit = jwt.sign({ ...claims(), actor_type: 'user' }, TEST_SYSTEM_JWT_SECRET, { algorithm: 'HS256', expiresIn: 600 });
    for (const token of [user, explicit]) expectInvalidToken(await stack.http.get('/v1/accounts').set(bearer(token)));
    // …while the same claims signed with JWT_SECRET are a user, who may not register providers.
    const res = await stack.http.post('/v1/payment-providers').set(bearer(signToken(claims()))).send(provider());
    expect(res.status).toBe(403);
  });

  it('an unknown actor_type is refused whatever signs it', async () => {
    for (const secret of [TEST_JWT_SECRET, TEST_SYSTEM_JWT_SECRET]) {
      const token = jwt.sign({ ...claims(), actor_type: 'admin' }, secret, { algorithm: 'HS256', expiresIn: 600 });
      expectInvalidToken(await stack.http.get('/v1/accounts').set(bearer(token)));
    }
  });
});

describe('system actor tokens (RS256/ES256 with SYSTEM_JWT_PUBLIC_KEY)', () => {
  const users = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const system = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pem = (key: typeof users.publicKey) => key.export({ type: 'spki', format: 'pem' }).toString();
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack({ JWT_SECRET: '', SYSTEM_JWT_SECRET: '', JWT_PUBLIC_KEY: pem(users.publicKey), SYSTEM_JWT_PUBLIC_KEY: pem(system.publicKey) });
  });
  afterAll(async () => { await stack.close(); });

  it('accepts a system token signed with the system key only, never with the users\' key (JWT_PUBLIC_KEY)', async () => {
    const sign = (key: typeof users.privateKey, body: object) => jwt.sign(body, key, { algorithm: 'ES256', expiresIn: 600 });
    const good = await stack.http.post('/v1/payment-providers').set(bearer(sign(system.privateKey, { ...platformClaims(), actor_type: 'system' }))).send(provider());
    expect(good.status, JSON.stringify(good.body)).toBe(201);
    expectInvalidToken(await stack.http.post('/v1/payment-providers').set(bearer(sign(users.privateKey, { ...claims(), actor_type: 'system' }))).send(provider()));
    // Users sign with theirs; the system key signs no user.
    expect((await stack.http.get('/v1/accounts').set(bearer(sign(users.privateKey, claims())))).status).toBe(200);
    expectInvalidToken(await stack.http.get('/v1/accounts').set(bearer(sign(system.privateKey, claims()))));
    // No HS256 key here: neither the old secret nor the public key used as an HMAC secret gets in.
    expectInvalidToken(await stack.http.post('/v1/payment-providers')
      .set(bearer(jwt.sign({ ...claims(), actor_type: 'system' }, TEST_SYSTEM_JWT_SECRET, { algorithm: 'HS256', expiresIn: 600 }))).send(provider()));
    expectInvalidToken(await stack.http.post('/v1/payment-providers')
      .set(bearer(jwt.sign({ ...claims(), actor_type: 'system' }, pem(system.publicKey), { algorithm: 'HS256', expiresIn: 600 }))).send(provider()));
  });
});
