import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../lib/ids';
import { bearer, createMerchant, Merchant, signToken, startStack, TestStack, unique } from '../support/stack';

let stack: TestStack;
beforeAll(async () => { stack = await startStack(); });
afterAll(async () => { await stack.close(); });

/** Notifications are written by the system (workflows, activities); tests seed them the same way. */
async function seed(m: Merchant, n: number, extra: { user_id?: string; archived?: boolean } = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 1) {
    const id = newId('ntf');
    await stack.db('core.notifications').insert({
      id, account_id: m.account.id, type: 'webhook_endpoint.disabled', details: JSON.stringify({ n: i }), user_id: extra.user_id ?? null,
      archived_at: extra.archived ? new Date() : null, created_at: new Date(Date.now() - (n - i) * 1000),
    });
    ids.push(id);
  }
  return ids;
}

async function member(m: Merchant, role: string) {
  const userId = unique('usr');
  await stack.http.post(`/v1/account-memberships?account_id=${m.account.id}`).set(bearer(m.token)).send({ user_id: userId, role }).expect(201);
  return { userId, token: signToken({ sub: userId, workspace_id: m.workspaceId }) };
}

describe('GET /notifications', () => {
  it('lists the account\'s notifications newest first, paginated, with the account embedded', async () => {
    const m = await createMerchant(stack);
    const other = await createMerchant(stack);
    await seed(other, 2);
    const ids = await seed(m, 5);
    const res = await stack.http.get(`/v1/notifications?account_id=${m.account.id}&limit=2`).set(bearer(m.token));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, total: 5, page: 1, limit: 2, pages: 3 });
    expect(res.body.data.map((x: any) => x.id)).toEqual([ids[4], ids[3]]);
    expect(res.body.data[0]).toMatchObject({
      object: 'notification', account_id: m.account.id, user_id: null, type: 'webhook_endpoint.disabled', details: { n: 4 },
      archived: false, archived_at: null, account: { object: 'account', id: m.account.id },
    });
    const last = await stack.http.get('/v1/notifications?page=3&limit=2').set(bearer(m.secretKey));
    expect(last.body.data.map((x: any) => x.id)).toEqual([ids[0]]);
    for (const q of ['page=0', 'limit=500', 'archived=maybe', 'type=x']) {
      expect((await stack.http.get(`/v1/notifications?${q}`).set(bearer(m.secretKey))).status, q).toBe(400);
    }
  });

  it('filters by archived', async () => {
    const m = await createMerchant(stack);
    const open = await seed(m, 2);
    const archived = await seed(m, 1, { archived: true });
    const yes = await stack.http.get('/v1/notifications?archived=true').set(bearer(m.secretKey));
    expect(yes.body.data.map((x: any) => x.id)).toEqual(archived);
    expect(yes.body.total).toBe(1);
    expect(yes.body.data[0].archived_at).toMatch(/Z$/);
    const no = await stack.http.get('/v1/notifications?archived=false').set(bearer(m.secretKey));
    expect(no.body.data.map((x: any) => x.id).sort()).toEqual([...open].sort());
    expect((await stack.http.get('/v1/notifications').set(bearer(m.secretKey))).body.total).toBe(3);
  });

  it('shows a user the account\'s notifications and their own, not another user\'s', async () => {
    const m = await createMerchant(stack);
    const viewer = await member(m, 'VIEWER');
    const shared = await seed(m, 1);
    const mine = await seed(m, 1, { user_id: viewer.userId });
    const ownerOnly = await seed(m, 1, { user_id: m.userId });
    const res = await stack.http.get(`/v1/notifications?account_id=${m.account.id}`).set(bearer(viewer.token));
    expect(res.body.data.map((x: any) => x.id).sort()).toEqual([...shared, ...mine].sort());
    expect((await stack.http.post(`/v1/notifications/${ownerOnly[0]}/archive`).set(bearer(m.token)).send({})).status).toBe(200);
    const hidden = await stack.http.post(`/v1/notifications/${ownerOnly[0]}/unarchive`).set(bearer(viewer.token)).send({});
    expect(hidden.status).toBe(404);
    // The account's key acts for the whole account.
    expect((await stack.http.get('/v1/notifications').set(bearer(m.secretKey))).body.total).toBe(3);
  });

  it('refuses non-members (403 on the account), publishable keys, and tokens without account_id', async () => {
    const m = await createMerchant(stack);
    const stranger = signToken({ sub: unique('usr'), workspace_id: m.workspaceId });
    const res = await stack.http.get(`/v1/notifications?account_id=${m.account.id}`).set(bearer(stranger));
    expect(res.status).toBe(403);
    expect(res.body.error.details.reason).toBe('account_access_denied');
    expect((await stack.http.get('/v1/notifications').set(bearer(m.publishableKey))).body.error.details.reason).toBe('publishable_key_not_allowed');
    expect((await stack.http.get('/v1/notifications').set(bearer(m.token))).status).toBe(400);
  });
});

describe('archive and unarchive', () => {
  it('archives (keeping the first archived_at) and unarchives (clearing it), returning the notification with its account', async () => {
    const m = await createMerchant(stack);
    const [id] = await seed(m, 1);
    const archived = await stack.http.post(`/v1/notifications/${id}/archive`).set(bearer(m.secretKey)).send({});
    expect(archived.status).toBe(200);
    expect(archived.body.message).toBe('Notification archived');
    expect(archived.body.data).toMatchObject({ id, archived: true, account: { id: m.account.id, object: 'account' } });
    expect(archived.body.data.archived_at).toMatch(/^\d{4}-.*Z$/);
    const again = await stack.http.post(`/v1/notifications/${id}/archive`).set(bearer(m.secretKey)).send({});
    expect(again.body.data.archived_at).toBe(archived.body.data.archived_at);

    const res = await stack.http.post(`/v1/notifications/${id}/unarchive`).set(bearer(m.token)).send({});
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, message: 'Notification unarchived' });
    expect(res.body.data).toMatchObject({ object: 'notification', id, archived: false, archived_at: null, account: { id: m.account.id } });
    expect((await stack.db('core.notifications').where({ id }).first()).archived_at).toBeNull();
    expect((await stack.http.post(`/v1/notifications/${id}/unarchive`).set(bearer(m.token)).send({})).body.data.archived_at).toBeNull();
    const body = await stack.http.post(`/v1/notifications/${id}/unarchive`).set(bearer(m.token)).send({ archived_at: null });
    expect(body.status).toBe(400);
    expect(body.body.error.details.reason).toBe('unknown_field');
  });

  it('hides other tenants\' notifications as 404 and needs notification:write', async () => {
    const m = await createMerchant(stack);
    const other = await createMerchant(stack);
    const sandbox = await createMerchant(stack, { sandboxOf: m });
    const [id] = await seed(m, 1);
    for (const credential of [other.token, other.secretKey, sandbox.secretKey]) {
      for (const action of ['archive', 'unarchive']) {
        const res = await stack.http.post(`/v1/notifications/${id}/${action}`).set(bearer(credential)).send({});
        expect(res.status).toBe(404);
        expect(res.body.error.details.reason).toBe('not_found');
      }
    }
    expect((await stack.http.post('/v1/notifications/ntf_nope/archive').set(bearer(m.secretKey)).send({})).status).toBe(404);
    const viewer = await member(m, 'VIEWER');
    const denied = await stack.http.post(`/v1/notifications/${id}/archive`).set(bearer(viewer.token)).send({});
    expect(denied.status).toBe(403);
    expect(denied.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'notification:write' });
    expect((await stack.http.post(`/v1/notifications/${id}/archive`).set(bearer(m.publishableKey)).send({})).status).toBe(403);
    expect((await stack.db('core.notifications').where({ id }).first()).archived_at).toBeNull();
  });
});
