import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createMerchant, Merchant, signToken, startStack, TestStack, unique } from '../support/stack';

let stack: TestStack;
beforeAll(async () => { stack = await startStack(); });
afterAll(async () => { await stack.close(); });

interface Member { userId: string; token: string; membership: any }

async function addMember(m: Merchant, role: string, credential = m.token): Promise<Member> {
  const userId = unique('usr');
  const res = await stack.http.post(`/v1/account-memberships?account_id=${m.account.id}`).set(bearer(credential)).send({ user_id: userId, role });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { userId, token: signToken({ sub: userId, workspace_id: m.workspaceId }), membership: res.body.data };
}

async function ownerMembership(m: Merchant) {
  return stack.db('core.account_memberships').where({ account_id: m.account.id, user_id: m.userId }).first();
}

describe('POST /account-memberships', () => {
  it('gives a user a role, and the access that goes with it at once', async () => {
    const m = await createMerchant(stack);
    const customer = (await stack.http.post('/v1/customers').set(bearer(m.secretKey)).send({ name: 'c' })).body.data;
    const userId = unique('usr');
    const token = signToken({ sub: userId, workspace_id: unique('ws') });
    expect((await stack.http.get(`/v1/customers/${customer.id}`).set(bearer(token))).status).toBe(404);

    const res = await stack.http.post(`/v1/account-memberships?account_id=${m.account.id}`).set(bearer(m.token)).send({ user_id: userId, role: 'DEVELOPER' });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ object: 'account_membership', account_id: m.account.id, user_id: userId, role: 'DEVELOPER' });
    expect(res.body.data.id).toMatch(/^mem_/);
    expect(res.body.data.created_at).toMatch(/Z$/);
    expect((await stack.http.get(`/v1/customers/${customer.id}`).set(bearer(token))).status).toBe(200);
    const accounts = await stack.http.get('/v1/accounts').set(bearer(token));
    expect(accounts.body.data.map((a: any) => a.id)).toEqual([m.account.id]);
  });

  it('answers 409 conflict for a user who already has a membership', async () => {
    const m = await createMerchant(stack);
    const dup = await stack.http.post(`/v1/account-memberships?account_id=${m.account.id}`).set(bearer(m.token)).send({ user_id: m.userId, role: 'VIEWER' });
    expect(dup.status).toBe(409);
    expect(dup.body.error.details.reason).toBe('conflict');
    const a = await addMember(m, 'VIEWER');
    const again = await stack.http.post('/v1/account-memberships').set(bearer(m.secretKey)).send({ user_id: a.userId, role: 'ADMIN' });
    expect(again.status).toBe(409);
  });

  it('validates the body and needs account:membership:create', async () => {
    const m = await createMerchant(stack);
    const cases: [object, string, string][] = [
      [{ user_id: 'usr_x', role: 'GOD' }, 'validation_failed', 'body/role'],
      [{ role: 'VIEWER' }, 'validation_failed', 'body/user_id'],
      [{ user_id: '', role: 'VIEWER' }, 'validation_failed', 'body/user_id'],
      [{ user_id: 'usr_x', role: 'VIEWER', account_id: m.account.id }, 'unknown_field', 'body/account_id'],
    ];
    for (const [body, reason, path] of cases) {
      const res = await stack.http.post(`/v1/account-memberships?account_id=${m.account.id}`).set(bearer(m.token)).send(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details.reason).toBe(reason);
      expect(res.body.error.details.fields.map((f: any) => f.path)).toContain(path);
    }
    const developer = await addMember(m, 'DEVELOPER');
    const denied = await stack.http.post(`/v1/account-memberships?account_id=${m.account.id}`).set(bearer(developer.token)).send({ user_id: unique('usr'), role: 'VIEWER' });
    expect(denied.status).toBe(403);
    expect(denied.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'account:membership:create' });
    const other = await createMerchant(stack);
    const cross = await stack.http.post(`/v1/account-memberships?account_id=${other.account.id}`).set(bearer(m.token)).send({ user_id: unique('usr'), role: 'OWNER' });
    expect(cross.status).toBe(403);
    expect(cross.body.error.details.reason).toBe('account_access_denied');
    expect((await stack.http.post('/v1/account-memberships').set(bearer(m.publishableKey)).send({ user_id: 'usr_x', role: 'VIEWER' })).body.error.details.reason)
      .toBe('publishable_key_not_allowed');
  });
});

describe('POST /account-memberships: no role beyond the grantor\'s own', () => {
  const invite = (m: Merchant, credential: string, role: string) =>
    stack.http.post(`/v1/account-memberships?account_id=${m.account.id}`).set(bearer(credential)).send({ user_id: unique('usr'), role });
  async function keyWith(m: Merchant, permissions: Record<string, string[]>): Promise<string> {
    const res = await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'narrow', permissions });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data.key;
  }

  it('a key gives only a role whose every permission it holds: account:membership:create alone makes no OWNER', async () => {
    const m = await createMerchant(stack);
    const narrow = await keyWith(m, { 'account:membership': ['create'] });
    for (const role of ['OWNER', 'ADMIN', 'DEVELOPER', 'VIEWER']) {
      const res = await invite(m, narrow, role);
      expect(res.status, role).toBe(403);
      expect(res.body.error.details.reason).toBe('insufficient_permissions');
      expect(res.body.error.details.required).toEqual(expect.arrayContaining(['payment:read', 'account:read']));
    }
    expect(await stack.db('core.account_memberships').where({ account_id: m.account.id }).count('* as n').first()).toEqual({ n: 1 });

    // Holding every read as well, it may make a VIEWER, and still no more.
    const readsToo = await keyWith(m, {
      'account:membership': ['create', 'read'], account: ['read'], 'account:api:key': ['read'], customer: ['read'], payment: ['read'],
      refund: ['read'], checkout: ['read'], billing: ['read'], dispute: ['read'], routing: ['read'], webhook: ['read'], notification: ['read'], event: ['read'],
    });
    expect((await invite(m, readsToo, 'VIEWER')).status).toBe(201);
    const developer = await invite(m, readsToo, 'DEVELOPER');
    expect(developer.status).toBe(403);
    expect(developer.body.error.details.required).toEqual(expect.arrayContaining(['payment:create', 'customer:write']));
  });

  it('a user gives no role above its own: an ADMIN makes ADMINs and DEVELOPERs, not OWNERs; an OWNER makes OWNERs', async () => {
    const m = await createMerchant(stack);
    const admin = await addMember(m, 'ADMIN');
    expect((await invite(m, admin.token, 'ADMIN')).status).toBe(201);
    expect((await invite(m, admin.token, 'DEVELOPER')).status).toBe(201);
    const owner = await invite(m, admin.token, 'OWNER');
    expect(owner.status).toBe(403);
    expect(owner.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'role:OWNER' });
    expect(owner.body.error.message).toBe('The OWNER role ranks above the caller\'s own (ADMIN).');
    expect((await invite(m, m.token, 'OWNER')).status).toBe(201);
  });
});

describe('GET /account-memberships', () => {
  it('lists the account\'s memberships newest first, for any role that can read them', async () => {
    const m = await createMerchant(stack);
    const other = await createMerchant(stack);
    const viewer = await addMember(m, 'VIEWER');
    const admin = await addMember(m, 'ADMIN');
    const res = await stack.http.get(`/v1/account-memberships?account_id=${m.account.id}`).set(bearer(viewer.token));
    expect(res.status).toBe(200);
    expect(res.body.data.map((x: any) => [x.user_id, x.role])).toEqual([[admin.userId, 'ADMIN'], [viewer.userId, 'VIEWER'], [m.userId, 'OWNER']]);
    const byKey = await stack.http.get('/v1/account-memberships').set(bearer(m.secretKey));
    expect(byKey.body.data).toHaveLength(3);
    expect((await stack.http.get(`/v1/account-memberships?account_id=${m.account.id}`).set(bearer(other.token))).status).toBe(403);
    expect((await stack.http.get('/v1/account-memberships').set(bearer(m.token))).status).toBe(400);
  });
});

describe('DELETE /account-memberships/:id', () => {
  it('removes a membership with the void envelope; the user loses access on the next request', async () => {
    const m = await createMerchant(stack);
    const customer = (await stack.http.post('/v1/customers').set(bearer(m.secretKey)).send({ name: 'c' })).body.data;
    const dev = await addMember(m, 'DEVELOPER');
    expect((await stack.http.get(`/v1/customers/${customer.id}`).set(bearer(dev.token))).status).toBe(200);

    const res = await stack.http.delete(`/v1/account-memberships/${dev.membership.id}`).set(bearer(m.token));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: 'Account membership deleted', success: true });
    expect((await stack.http.get(`/v1/customers/${customer.id}`).set(bearer(dev.token))).status).toBe(404);
    const listing = await stack.http.get(`/v1/customers?account_id=${m.account.id}`).set(bearer(dev.token));
    expect(listing.status).toBe(403);
    expect(listing.body.error.details.reason).toBe('account_access_denied');
    expect(await stack.db('core.account_memberships').where({ id: dev.membership.id }).first()).toBeUndefined();
    expect((await stack.http.delete(`/v1/account-memberships/${dev.membership.id}`).set(bearer(m.token))).status).toBe(404);
  });

  it('lets a member leave, and hides other tenants\' memberships as 404', async () => {
    const m = await createMerchant(stack);
    const other = await createMerchant(stack);
    const viewer = await addMember(m, 'VIEWER');
    // A viewer lacks account:membership:delete, even for its own membership.
    const self = await stack.http.delete(`/v1/account-memberships/${viewer.membership.id}`).set(bearer(viewer.token));
    expect(self.status).toBe(403);
    expect(self.body.error.details.required).toBe('account:membership:delete');
    const admin = await addMember(m, 'ADMIN');
    expect((await stack.http.delete(`/v1/account-memberships/${admin.membership.id}`).set(bearer(admin.token))).status).toBe(200);

    const theirs = await ownerMembership(other);
    for (const credential of [m.token, m.secretKey]) {
      const res = await stack.http.delete(`/v1/account-memberships/${theirs.id}`).set(bearer(credential));
      expect(res.status).toBe(404);
      expect(res.body.error.details.reason).toBe('not_found');
    }
    expect((await stack.http.delete('/v1/account-memberships/nope').set(bearer(m.token))).status).toBe(404);
    const developer = await addMember(m, 'DEVELOPER');
    expect((await stack.http.delete(`/v1/account-memberships/${viewer.membership.id}`).set(bearer(developer.token))).status).toBe(403);
    expect((await stack.http.delete(`/v1/account-memberships/${viewer.membership.id}`).set(bearer(m.publishableKey))).status).toBe(403);
  });

  it('never removes the last owner (422 last_owner)', async () => {
    const m = await createMerchant(stack);
    const owner = await ownerMembership(m);
    const res = await stack.http.delete(`/v1/account-memberships/${owner.id}`).set(bearer(m.token));
    expect(res.status).toBe(422);
    expect(res.body.error.details.reason).toBe('last_owner');
    expect((await stack.http.delete(`/v1/account-memberships/${owner.id}`).set(bearer(m.secretKey))).status).toBe(422);

    const second = await addMember(m, 'OWNER');
    expect((await stack.http.delete(`/v1/account-memberships/${owner.id}`).set(bearer(second.token))).status).toBe(200);
    const last = await stack.http.delete(`/v1/account-memberships/${second.membership.id}`).set(bearer(second.token));
    expect(last.status).toBe(422);
    expect(await stack.db('core.account_memberships').where({ account_id: m.account.id, role: 'OWNER' })).toHaveLength(1);
  });

  it('keeps one owner when two owners are removed at the same moment', async () => {
    for (let round = 0; round < 5; round += 1) {
      const m = await createMerchant(stack);
      const owner = await ownerMembership(m);
      const second = await addMember(m, 'OWNER');
      const [a, b] = await Promise.all([
        stack.http.delete(`/v1/account-memberships/${owner.id}`).set(bearer(m.secretKey)),
        stack.http.delete(`/v1/account-memberships/${second.membership.id}`).set(bearer(m.secretKey)),
      ]);
      expect([a.status, b.status].sort()).toEqual([200, 422]);
      expect([a, b].find((r) => r.status === 422)!.body.error.details.reason).toBe('last_owner');
      expect(await stack.db('core.account_memberships').where({ account_id: m.account.id, role: 'OWNER' })).toHaveLength(1);
    }
  });
});
