import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAuditChains } from '../../db/audit';
import { bearer, createMerchant, Merchant, signToken, startStack, TestStack, unique } from '../support/stack';

/** GET /v1/audit-events (docs/security.md §19): OWNER and ADMIN only; filters; keyset pages. */

let stack: TestStack;
let m: Merchant;
beforeAll(async () => {
  stack = await startStack({ RATE_LIMIT_RPS: '0' });
  m = await createMerchant(stack);
});
afterAll(async () => { await stack?.close(); });

const scoped = (path: string) => `${path}${path.includes('?') ? '&' : '?'}account_id=${m.account.id}`;

describe('GET /v1/audit-events', () => {
  async function member(role: string): Promise<string> {
    const userId = unique('usr');
    const res = await stack.http.post(scoped('/v1/account-memberships')).set(bearer(m.token)).send({ user_id: userId, role });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return signToken({ sub: userId, workspace_id: m.workspaceId });
  }

  it('is for OWNER and ADMIN only (audit:read)', async () => {
    for (const role of ['DEVELOPER', 'VIEWER']) {
      const res = await stack.http.get(scoped('/v1/audit-events')).set(bearer(await member(role)));
      expect(res.status, role).toBe(403);
      expect(res.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'audit:read' });
    }
    const admin = await stack.http.get(scoped('/v1/audit-events')).set(bearer(await member('ADMIN')));
    expect(admin.status).toBe(200);
    expect(admin.body.data.length).toBeGreaterThan(0);
  });

  it('filters by action, resource, actor and time, and pages by keyset', async () => {
    const t = await createMerchant(stack);
    const before = new Date().toISOString();
    const ids: string[] = [];
    for (const name of ['a', 'b', 'c', 'd', 'e']) ids.push((await stack.http.post('/v1/api-keys').set(bearer(t.secretKey)).send({ name })).body.data.id);
    const list = (query: string) => stack.http.get(`/v1/audit-events?${query}`).set(bearer(t.secretKey));

    const all = await list('action=api_key.created');
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    expect(all.body.data.map((e: any) => e.resource_id)).toEqual([...ids].reverse());
    expect(all.body.data[0]).toMatchObject({
      object: 'audit_event', id: expect.stringMatching(/^aud_/), account_id: t.account.id, actor_type: 'api_key',
      action: 'api_key.created', resource_type: 'api_key', changes: { name: 'e' }, seq: 6, hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(all.body.data[0].prev_hash).toBe(all.body.data[1].hash);
    expect((await list(`resource_type=api_key&resource_id=${ids[2]}`)).body.data.map((e: any) => e.resource_id)).toEqual([ids[2]]);
    const actor = all.body.data[0].actor_id;
    expect((await list(`actor_id=${actor}`)).body.total).toBe(5);
    expect((await list('actor_id=usr_nobody')).body.data).toEqual([]);
    expect((await list('action=api_key.deleted')).body.data).toEqual([]);
    expect((await list(`from=${encodeURIComponent(before)}`)).body.total).toBe(5);
    // The account's own creation came before.
    expect((await list(`to=${encodeURIComponent(before)}`)).body.data.map((e: any) => e.action)).toEqual(['account.created']);

    const first = await list('action=api_key.created&limit=2');
    expect(first.body).toMatchObject({ total: 5, page: 1, has_more: true });
    const second = await list(`action=api_key.created&limit=2&starting_after=${first.body.data[1].id}`);
    expect(second.body).toMatchObject({ page: null, has_more: true });
    expect(second.body.data.map((e: any) => e.resource_id)).toEqual([ids[2], ids[1]]);
    const back = await list(`action=api_key.created&limit=2&ending_before=${second.body.data[0].id}`);
    expect(back.body.data.map((e: any) => e.id)).toEqual(first.body.data.map((e: any) => e.id));

    // Another account's row is no place in this list.
    const othersRow = await stack.db('core.audit_events').where({ account_id: m.account.id }).first();
    expect((await list(`starting_after=${othersRow.id}`)).status).toBe(422);
    expect((await list('starting_after=nope')).status).toBe(400);
  });
});

describe('the chain under concurrent changes', () => {
  it('gives each of an account\'s concurrent changes its own place, and the chain holds', async () => {
    const t = await createMerchant(stack);
    const made = await Promise.all(Array.from({ length: 12 }, (_, i) =>
      stack.http.post('/v1/api-keys').set(bearer(t.secretKey)).send({ name: `parallel ${i}` })));
    expect(made.map((r) => r.status)).toEqual(Array(12).fill(201));
    const seqs = (await stack.db('core.audit_events').where({ account_id: t.account.id }).orderBy('seq')).map((r) => Number(r.seq));
    expect(seqs).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
    expect(await verifyAuditChains(stack.db, t.account.id)).toEqual([expect.objectContaining({ rows: 13, broken: null })]);
  });
});
