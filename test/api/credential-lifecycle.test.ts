import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../db/local-state';
import { ConfigError } from '../../lib/config';
import { bearer, createMerchant, Merchant, signSystemToken, signToken, startStack, suiteEnv, TestStack, unique } from '../support/stack';

// How credentials are born, bounded and taken away (docs/security.md, "Credential lifecycle").

let stack: TestStack;
beforeAll(async () => { stack = await startStack(); });
afterAll(async () => { await stack?.close(); });

const SECRET = /[sp]k_(live|test)_[0-9A-Za-z]{40}/;
const inHours = (h: number) => new Date(Date.now() + h * 3_600_000).toISOString();
const managedKey = (m: Merchant, type = 'SECRET') => m.account.api_keys.find((k: { type: string }) => k.type === type);

async function createKey(credential: string, body: Record<string, unknown>, accountId?: string) {
  const query = accountId ? `?account_id=${accountId}` : '';
  return stack.http.post(`/v1/api-keys${query}`).set(bearer(credential)).send({ name: 'k', ...body });
}

async function member(m: Merchant, role: string, credential = m.token) {
  const userId = unique('usr');
  const res = await stack.http.post(`/v1/account-memberships?account_id=${m.account.id}`).set(bearer(credential)).send({ user_id: userId, role });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { userId, token: signToken({ sub: userId, workspace_id: m.workspaceId }), membership: res.body.data as { id: string } };
}

describe('a key\'s expiry is bounded by the key that creates it', () => {
  it('refuses a later expiry (400 at body/expires_at) and gives a key asked for with none the creator\'s own', async () => {
    const m = await createMerchant(stack);
    const creator = (await createKey(m.secretKey, { expires_at: inHours(1) })).body.data;
    expect(creator.expires_at).not.toBeNull();

    const later = await createKey(creator.key, { expires_at: inHours(2) });
    expect(later.status, JSON.stringify(later.body)).toBe(400);
    expect(later.body.error.details).toMatchObject({ reason: 'validation_failed', fields: [{ path: 'body/expires_at' }] });
    expect(later.body.error.details.fields[0].message).toContain(creator.expires_at);

    const none = await createKey(creator.key, {});
    expect(none.status, JSON.stringify(none.body)).toBe(201);
    expect(none.body.data.expires_at).toBe(creator.expires_at);

    const sooner = inHours(0.5);
    const earlier = await createKey(creator.key, { expires_at: sooner });
    expect(earlier.status).toBe(201);
    expect(earlier.body.data.expires_at).toBe(sooner);
  });

  it('a key without an expiry, a user and the system actor create keys with no expiry (they have none to pass on)', async () => {
    const m = await createMerchant(stack);
    const system = signSystemToken({ sub: unique('usr_sys'), workspace_id: m.workspaceId });
    for (const [credential, accountId] of [[m.secretKey], [m.token, m.account.id], [system, m.account.id]] as const) {
      const res = await createKey(credential, {}, accountId);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.data.expires_at).toBeNull();
    }
  });

  it('an expiring key cannot regenerate a key that would outlive it (422 key_outlives_caller)', async () => {
    const m = await createMerchant(stack);
    const creator = (await createKey(m.secretKey, { expires_at: inHours(1) })).body.data;
    const res = await stack.http.post(`/v1/api-keys/${managedKey(m).id}/regenerate`).set(bearer(creator.key)).send({});
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body.error.details.reason).toBe('key_outlives_caller');
    expect(JSON.stringify(res.body)).not.toMatch(SECRET);
    // The managed key's value is unchanged: it still authenticates.
    expect((await stack.http.get('/v1/api-keys').set(bearer(m.secretKey))).status).toBe(200);
  });
});

describe('a key records who created it (created_by)', () => {
  it('names the user, the system actor or the key that created it, on creation and in the listing, never a secret', async () => {
    const m = await createMerchant(stack);
    const systemSub = unique('usr_sys');
    const system = signSystemToken({ sub: systemSub, workspace_id: m.workspaceId });
    const byUser = (await createKey(m.token, { name: 'by user' }, m.account.id)).body.data;
    const bySystem = (await createKey(system, { name: 'by system' }, m.account.id)).body.data;
    const byKey = (await createKey(m.secretKey, { name: 'by key' })).body.data;
    const byThatKey = (await createKey(byKey.key, { name: 'by that key', permissions: { payment: ['read'] } })).body.data;

    expect(byUser.created_by).toEqual({ type: 'user', id: m.userId });
    expect(bySystem.created_by).toEqual({ type: 'system', id: systemSub });
    expect(byKey.created_by).toEqual({ type: 'api_key', id: managedKey(m).id });
    expect(byThatKey.created_by).toEqual({ type: 'api_key', id: byKey.id });

    const listed = (await stack.http.get('/v1/api-keys').set(bearer(m.secretKey))).body.data as { name: string; created_by: unknown }[];
    const createdBy = Object.fromEntries(listed.map((k) => [k.name, k.created_by]));
    expect(createdBy).toMatchObject({
      'by user': byUser.created_by, 'by system': bySystem.created_by, 'by key': byKey.created_by, 'by that key': byThatKey.created_by,
    });
    // The managed keys were made with the account, by no credential of their own.
    expect(createdBy['Managed secret key']).toBeNull();
    expect(JSON.stringify(listed)).not.toMatch(SECRET);
  });
});

describe('removing a membership follows the rule for giving one', () => {
  const remove = (credential: string, id: string) => stack.http.delete(`/v1/account-memberships/${id}`).set(bearer(credential));

  it('an ADMIN cannot remove an OWNER (403), and still removes ADMINs and DEVELOPERs', async () => {
    const m = await createMerchant(stack);
    const secondOwner = await member(m, 'OWNER');
    const admin = await member(m, 'ADMIN');
    const otherAdmin = await member(m, 'ADMIN');
    const developer = await member(m, 'DEVELOPER');

    const refused = await remove(admin.token, secondOwner.membership.id);
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(refused.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'role:OWNER' });
    expect(await stack.db('core.account_memberships').where({ id: secondOwner.membership.id }).first()).toBeDefined();

    expect((await remove(admin.token, otherAdmin.membership.id)).status).toBe(200);
    expect((await remove(admin.token, developer.membership.id)).status).toBe(200);
    expect((await remove(m.token, secondOwner.membership.id)).status).toBe(200);
  });

  it('a key removes only a role whose every permission it holds', async () => {
    const m = await createMerchant(stack);
    const viewer = await member(m, 'VIEWER');
    const narrow = (await createKey(m.secretKey, { permissions: { 'account:membership': ['delete'] } })).body.data.key;
    const refused = await remove(narrow, viewer.membership.id);
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(refused.body.error.details.reason).toBe('insufficient_permissions');
    expect(refused.body.error.details.required).toEqual(expect.arrayContaining(['payment:read', 'account:read']));
    expect((await remove(m.secretKey, viewer.membership.id)).status).toBe(200);
  });
});

describe('keys per account are capped (API_KEYS_PER_ACCOUNT_MAX)', () => {
  let capped: TestStack;
  beforeAll(async () => { capped = await startStack({ API_KEYS_PER_ACCOUNT_MAX: '4' }); });
  afterAll(async () => { await capped?.close(); });

  it('defaults to 50 and refuses a value that is not a whole number ≥ 1', () => {
    expect(loadConfig(suiteEnv()).apiKeysPerAccountMax).toBe(50);
    for (const bad of ['0', '-1', 'many']) {
      expect(() => loadConfig({ ...suiteEnv(), API_KEYS_PER_ACCOUNT_MAX: bad })).toThrow(ConfigError);
    }
  });

  it('counts the live keys, managed ones too: past the cap 422 api_key_limit_reached; a deleted key frees its place', async () => {
    const m = await createMerchant(capped);
    const create = () => capped.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'k' });
    // Two managed keys and three creates at once for the two places left: exactly two are made.
    const results = await Promise.all([create(), create(), create()]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 422]);
    const refused = results.find((r) => r.status === 422)!;
    expect(refused.body.error.details).toEqual({ reason: 'api_key_limit_reached', limit: 4 });
    expect(refused.body.error.message).toBe('An account may have at most 4 API keys; delete one first.');
    expect(await capped.db('core.api_keys').where({ account_id: m.account.id, deleted: false }).count('* as n').first()).toEqual({ n: 4 });

    const made = results.find((r) => r.status === 201)!.body.data;
    expect((await capped.http.delete(`/v1/api-keys/${made.id}`).set(bearer(m.secretKey))).status).toBe(200);
    expect((await create()).status).toBe(201);
    expect((await create()).status).toBe(422);
  });
});

describe('the idempotency scope of a system actor includes its workspace', () => {
  const createAccount = (token: string, key: string) =>
    stack.http.post('/v1/accounts').set(bearer(token)).set('Idempotency-Key', key).send({ name: 'Operator shop' });

  it('two workspaces\' system tokens with the same subject never share a stored answer', async () => {
    const sub = unique('usr_sys');
    const [wsA, wsB] = [unique('ws'), unique('ws')];
    const key = unique('idem');
    const first = await createAccount(signSystemToken({ sub, workspace_id: wsA }), key);
    expect(first.status, JSON.stringify(first.body)).toBe(201);

    const other = await createAccount(signSystemToken({ sub, workspace_id: wsB }), key);
    expect(other.status, JSON.stringify(other.body)).toBe(201);
    expect(other.headers['idempotent-replayed']).toBeUndefined();
    expect(other.body.data.id).not.toBe(first.body.data.id);
    const keysOfA = first.body.data.api_keys.map((k: { key: string }) => k.key);
    expect(JSON.stringify(other.body)).not.toContain(keysOfA[0]);
    expect((await stack.db('core.accounts').where({ id: other.body.data.id }).first()).workspace_id).toBe(wsB);

    // The same token retrying still gets its own answer back.
    const retry = await createAccount(signSystemToken({ sub, workspace_id: wsA }), key);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body.data.id).toBe(first.body.data.id);
  });

  it('a user token whose subject is a system actor\'s does not share its stored answers either', async () => {
    const sub = unique('usr_sys');
    const ws = unique('ws');
    const key = unique('idem');
    const system = await createAccount(signSystemToken({ sub, workspace_id: ws }), key);
    expect(system.status).toBe(201);
    const user = await createAccount(signToken({ sub, workspace_id: ws }), key);
    expect(user.status).toBe(201);
    expect(user.headers['idempotent-replayed']).toBeUndefined();
    expect(user.body.data.id).not.toBe(system.body.data.id);
  });
});
