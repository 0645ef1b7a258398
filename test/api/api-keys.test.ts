import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { bearer, createMerchant, Merchant, RunningWorker, signToken, startStack, startWorker, TestStack, unique } from '../support/stack';

let stack: TestStack;
let worker: RunningWorker;
beforeAll(async () => {
  stack = await startStack();
  worker = await startWorker(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
});

async function member(m: Merchant, role: string): Promise<string> {
  const userId = unique('usr');
  const res = await stack.http.post(`/v1/account-memberships?account_id=${m.account.id}`).set(bearer(m.token)).send({ user_id: userId, role });
  expect(res.status).toBe(201);
  return signToken({ sub: userId, workspace_id: m.workspaceId });
}

const managedKey = (m: Merchant, type = 'SECRET') => m.account.api_keys.find((k: any) => k.type === type);
const canList = async (key: string) => (await stack.http.get('/v1/api-keys').set(bearer(key))).status;

async function customKey(m: Merchant, permissions: Record<string, string[]>): Promise<string> {
  const res = await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'custom', permissions });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.key;
}

const regenerate = (m: Merchant, credential: string, type = 'SECRET') =>
  stack.http.post(`/v1/api-keys/${managedKey(m, type).id}/regenerate`).set(bearer(credential)).send({});

function expectDenied(res: { status: number; body: any }) {
  expect(res.status, JSON.stringify(res.body)).toBe(403);
  expect(res.body).toMatchObject({ success: false, error: { code: 403, details: { reason: 'insufficient_permissions' } } });
  expect(JSON.stringify(res.body)).not.toMatch(/[sp]k_(live|test)_[0-9A-Za-z]{40}/);
}

/** A workflow history as text, with every payload decoded, so a test can look for secrets in it. */
async function historyText(workflowId: string): Promise<string> {
  const client = await stack.deps.temporal();
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  // Payload bytes come back as base64 (or as bytes): decode every one of them next to the raw form.
  const decoded: string[] = [];
  const raw = JSON.stringify(history, (key, v) => {
    if (v instanceof Uint8Array) decoded.push(Buffer.from(v).toString('utf8'));
    else if (key === 'data' && typeof v === 'string') decoded.push(Buffer.from(v, 'base64').toString('utf8'));
    return v;
  });
  return [raw, ...decoded].join('\n');
}

describe('POST /api-keys', () => {
  it('creates a custom secret key, shown once, that works at once and is stored only as a hash', async () => {
    const m = await createMerchant(stack);
    const res = await stack.http.post(`/v1/api-keys?account_id=${m.account.id}`).set(bearer(m.token))
      .send({ name: 'backend', permissions: { customer: ['read', 'write'], payment: ['read'] }, metadata: { team: 'core' } });
    expect(res.status).toBe(201);
    const key = res.body.data;
    expect(key).toMatchObject({
      object: 'api_key', account_id: m.account.id, name: 'backend', type: 'SECRET', status: 'ACTIVE', managed: false, deleted: false,
      environment: 'production', permissions: { customer: ['read', 'write'], payment: ['read'] }, metadata: { team: 'core' }, expires_at: null,
    });
    expect(key.id).toMatch(/^key_/);
    expect(key.key).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    expect(key.redacted_key).toBe(`${key.key.slice(0, 8)}…${key.key.slice(-4)}`);

    expect((await stack.http.get('/v1/customers').set(bearer(key.key))).status).toBe(200);
    const denied = await stack.http.get('/v1/api-keys').set(bearer(key.key));
    expect(denied.status).toBe(403);
    expect(denied.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'account:api:key:read' });

    const rows = await stack.db('core.api_keys').where({ id: key.id });
    expect(JSON.stringify(rows)).not.toContain(key.key);
  });

  it('defaults to a secret key with the creator\'s permissions; a publishable key gets payment read/confirm', async () => {
    const m = await createMerchant(stack);
    const secret = await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'all' });
    expect(secret.status).toBe(201);
    expect(secret.body.data.type).toBe('SECRET');
    expect(secret.body.data.permissions).toEqual(managedKey(m).permissions);
    const pk = await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'web', type: 'PUBLISHABLE' });
    expect(pk.status).toBe(201);
    expect(pk.body.data.key).toMatch(/^pk_live_/);
    expect(pk.body.data.permissions).toEqual({ payment: ['read', 'confirm'] });
    const sandbox = await createMerchant(stack, { sandboxOf: m });
    const test = await stack.http.post('/v1/api-keys').set(bearer(sandbox.secretKey)).send({ name: 'ci' });
    expect(test.body.data).toMatchObject({ environment: 'sandbox', account_id: sandbox.account.id });
    expect(test.body.data.key).toMatch(/^sk_test_/);
  });

  it('validates permissions against the catalogue, expiry and shape, with field paths', async () => {
    const m = await createMerchant(stack);
    const past = new Date(Date.now() - 60_000).toISOString();
    const cases: [object, string, string][] = [
      [{ name: 'x', permissions: { customer: ['fly'] } }, 'validation_failed', 'body/permissions/customer'],
      [{ name: 'x', permissions: { bogus: ['read'] } }, 'validation_failed', 'body/permissions/bogus'],
      [{ name: 'x', permissions: { customer: 'read' } }, 'validation_failed', 'body/permissions/customer'],
      [{ name: 'x', type: 'PUBLISHABLE', permissions: { customer: ['read'] } }, 'validation_failed', 'body/permissions/customer'],
      [{ name: 'x', expires_at: past }, 'validation_failed', 'body/expires_at'],
      [{ name: 'x', expires_at: 'tomorrow' }, 'validation_failed', 'body/expires_at'],
      [{ name: 'x', type: 'RESTRICTED' }, 'validation_failed', 'body/type'],
      [{ permissions: {} }, 'validation_failed', 'body/name'],
      [{ name: 'x', managed: true }, 'unknown_field', 'body/managed'],
    ];
    for (const [body, reason, path] of cases) {
      const res = await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details.reason).toBe(reason);
      expect(res.body.error.details.fields.map((f: any) => f.path)).toContain(path);
    }
  });

  it('never gives a key more than its creator holds, and needs account:api:key:create', async () => {
    const m = await createMerchant(stack);
    const developer = await member(m, 'DEVELOPER');
    const escalate = await stack.http.post(`/v1/api-keys?account_id=${m.account.id}`).set(bearer(developer))
      .send({ name: 'x', permissions: { 'account:membership': ['delete'] } });
    expect(escalate.status).toBe(403);
    expect(escalate.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: ['account:membership:delete'] });
    const own = await stack.http.post(`/v1/api-keys?account_id=${m.account.id}`).set(bearer(developer)).send({ name: 'dev' });
    expect(own.status).toBe(201);
    expect(own.body.data.permissions['account:membership']).toEqual(['read']);

    const viewer = await member(m, 'VIEWER');
    const res = await stack.http.post(`/v1/api-keys?account_id=${m.account.id}`).set(bearer(viewer)).send({ name: 'x' });
    expect(res.status).toBe(403);
    expect(res.body.error.details.required).toBe('account:api:key:create');
    expect((await stack.http.post('/v1/api-keys').set(bearer(m.publishableKey)).send({ name: 'x' })).body.error.details.reason)
      .toBe('publishable_key_not_allowed');
    const other = await createMerchant(stack);
    const cross = await stack.http.post(`/v1/api-keys?account_id=${other.account.id}`).set(bearer(m.secretKey)).send({ name: 'x' });
    expect(cross.status).toBe(403);
    expect(cross.body.error.details.reason).toBe('account_access_denied');
  });

  it('stops accepting a key once it has expired', async () => {
    const m = await createMerchant(stack);
    const soon = new Date(Date.now() + 3_600_000).toISOString();
    const res = await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'temp', expires_at: soon });
    expect(res.body.data.expires_at).toBe(soon);
    expect(await canList(res.body.data.key)).toBe(200);
    await stack.db('core.api_keys').where({ id: res.body.data.id }).update({ expires_at: new Date(Date.now() - 1000) });
    // The write above bypasses the API, whose verified-key cache would trust the old expiry for up to 5 s.
    stack.deps.auth.invalidate();
    const after = await stack.http.get('/v1/api-keys').set(bearer(res.body.data.key));
    expect(after.status).toBe(401);
    expect(after.body.error.details.reason).toBe('invalid_api_key');
  });
});

describe('GET /api-keys', () => {
  it('lists the account\'s live keys, newest first, never with their values', async () => {
    const m = await createMerchant(stack);
    const other = await createMerchant(stack);
    const custom = (await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'custom' })).body.data;
    const gone = (await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'gone' })).body.data;
    await stack.http.delete(`/v1/api-keys/${gone.id}`).set(bearer(m.secretKey)).expect(200);

    const res = await stack.http.get(`/v1/api-keys?account_id=${m.account.id}`).set(bearer(m.token));
    expect(res.status).toBe(200);
    expect(res.body.data.map((k: any) => k.name)).toEqual(['custom', 'Managed publishable key', 'Managed secret key']);
    for (const k of res.body.data) {
      expect(k.key).toBeNull();
      expect(k.redacted_key).toMatch(/^[sp]k_live_…[0-9A-Za-z]{4}$/);
    }
    const text = JSON.stringify(res.body);
    for (const secret of [m.secretKey, m.publishableKey, custom.key]) expect(text).not.toContain(secret);
    expect(res.body.data.map((k: any) => k.id)).not.toContain(other.account.api_keys[0].id);
    const viewer = await member(m, 'VIEWER');
    expect((await stack.http.get(`/v1/api-keys?account_id=${m.account.id}`).set(bearer(viewer))).status).toBe(200);
    const stranger = signToken({ sub: unique('usr'), workspace_id: m.workspaceId });
    expect((await stack.http.get(`/v1/api-keys?account_id=${m.account.id}`).set(bearer(stranger))).status).toBe(403);
  });
});

describe('DELETE /api-keys/:id', () => {
  it('soft-deletes with the void envelope; the key answers 401 from then on', async () => {
    const m = await createMerchant(stack);
    const key = (await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'doomed' })).body.data;
    expect(await canList(key.key)).toBe(200);
    const res = await stack.http.delete(`/v1/api-keys/${key.id}`).set(bearer(m.token));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: 'API key deleted', success: true });
    const after = await stack.http.get('/v1/api-keys').set(bearer(key.key));
    expect(after.status).toBe(401);
    expect(after.body.error.details.reason).toBe('invalid_api_key');
    expect(await stack.db('core.api_keys').where({ id: key.id }).first()).toMatchObject({ deleted: true });
    expect((await stack.http.delete(`/v1/api-keys/${key.id}`).set(bearer(m.token))).status).toBe(404);
  });

  it('lets a key delete itself, and a managed key too', async () => {
    const m = await createMerchant(stack);
    const self = await stack.http.delete(`/v1/api-keys/${managedKey(m).id}`).set(bearer(m.secretKey));
    expect(self.status).toBe(200);
    expect(await canList(m.secretKey)).toBe(401);
  });

  it('needs account:api:key:delete, hides other tenants\' keys as 404 and refuses publishable keys', async () => {
    const m = await createMerchant(stack);
    const other = await createMerchant(stack);
    const key = (await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'k' })).body.data;
    for (const role of ['DEVELOPER', 'VIEWER']) {
      const res = await stack.http.delete(`/v1/api-keys/${key.id}`).set(bearer(await member(m, role)));
      expect(res.status, role).toBe(403);
      expect(res.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'account:api:key:delete' });
    }
    const limited = (await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'l', permissions: { 'account:api:key': ['read'] } })).body.data;
    expect((await stack.http.delete(`/v1/api-keys/${key.id}`).set(bearer(limited.key))).status).toBe(403);
    for (const credential of [other.secretKey, other.token]) {
      const res = await stack.http.delete(`/v1/api-keys/${key.id}`).set(bearer(credential));
      expect(res.status).toBe(404);
      expect(res.body.error.details.reason).toBe('not_found');
    }
    expect((await stack.http.delete(`/v1/api-keys/${key.id}`).set(bearer(m.publishableKey))).body.error.details.reason).toBe('publishable_key_not_allowed');
    expect((await stack.http.delete('/v1/api-keys/junk').set(bearer(m.secretKey))).status).toBe(404);
    expect(await canList(key.key)).toBe(200);
  });
});

describe('POST /api-keys/:id/regenerate', () => {
  it('rotates a managed key through the rotation workflow: the old value stops, the new one works', async () => {
    const m = await createMerchant(stack);
    const managed = managedKey(m);
    const res = await stack.http.post(`/v1/api-keys/${managed.id}/regenerate`).set(bearer(m.token)).send({});
    expect(res.status).toBe(200);
    expect(res.body.message).toBe('API key regenerated');
    const key = res.body.data;
    expect(key).toMatchObject({ object: 'api_key', id: managed.id, managed: true, type: 'SECRET', status: 'ACTIVE', deleted: false });
    expect(key.key).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    expect(key.key).not.toBe(m.secretKey);
    expect(key.redacted_key).toBe(`${key.key.slice(0, 8)}…${key.key.slice(-4)}`);

    const old = await stack.http.get('/v1/api-keys').set(bearer(m.secretKey));
    expect(old.status).toBe(401);
    expect(await canList(key.key)).toBe(200);

    const row = await stack.db('core.api_keys').where({ id: managed.id }).first();
    expect(row.rotation_count).toBe(1);
    const notification = await stack.db('core.notifications').where({ account_id: m.account.id, type: 'api_key.rotated' }).first();
    expect(notification.details).toMatchObject({ key_id: managed.id, rotation: 1, actor_type: 'user', actor_id: m.userId });
    const event = await stack.db('live.events').where({ subject_id: managed.id, event: 'api_key.rotated' }).first();
    expect(event).toBeTruthy();
    expect(JSON.stringify([notification, event])).not.toContain(key.key);

    // Again, with the new value itself: rotation 2.
    const second = await stack.http.post(`/v1/api-keys/${managed.id}/regenerate`).set(bearer(key.key)).send({});
    expect(second.status).toBe(200);
    expect(await canList(key.key)).toBe(401);
    expect(await canList(second.body.data.key)).toBe(200);
    expect((await stack.db('core.api_keys').where({ id: managed.id }).first()).rotation_count).toBe(2);
  });

  it('keeps every key value out of the workflow history', async () => {
    const m = await createMerchant(stack);
    const managed = managedKey(m);
    const res = await stack.http.post(`/v1/api-keys/${managed.id}/regenerate`).set(bearer(m.secretKey)).send({});
    expect(res.status).toBe(200);
    const text = await historyText(`api-key-rotation/${managed.id}/1`);
    const row = await stack.db('core.api_keys').where({ id: managed.id }).first();
    // The decoded history is readable (it carries the keyed hash), yet holds neither value.
    expect(text).toContain(row.key_hash);
    expect(text).not.toContain(res.body.data.key);
    expect(text).not.toContain(res.body.data.key.slice(8));
    expect(text).not.toContain(m.secretKey);
  });

  it('regenerates a managed publishable key and a sandbox key with their own prefixes', async () => {
    const m = await createMerchant(stack);
    const pk = await stack.http.post(`/v1/api-keys/${managedKey(m, 'PUBLISHABLE').id}/regenerate`).set(bearer(m.secretKey)).send({});
    expect(pk.status).toBe(200);
    expect(pk.body.data.key).toMatch(/^pk_live_/);
    const sandbox = await createMerchant(stack, { sandboxOf: m });
    const sk = await stack.http.post(`/v1/api-keys/${managedKey(sandbox).id}/regenerate`).set(bearer(sandbox.secretKey)).send({});
    expect(sk.status).toBe(200);
    expect(sk.body.data.key).toMatch(/^sk_test_/);
    expect(await stack.db('sandbox.events').where({ subject_id: managedKey(sandbox).id }).first()).toBeTruthy();
  });

  it('refuses custom keys (422), deleted and foreign keys (404), and callers without account:api:key:update', async () => {
    const m = await createMerchant(stack);
    const other = await createMerchant(stack);
    const custom = (await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'custom' })).body.data;
    const res = await stack.http.post(`/v1/api-keys/${custom.id}/regenerate`).set(bearer(m.secretKey)).send({});
    expect(res.status).toBe(422);
    expect(res.body.error.details.reason).toBe('key_not_managed');

    const foreign = await stack.http.post(`/v1/api-keys/${managedKey(other).id}/regenerate`).set(bearer(m.secretKey)).send({});
    expect(foreign.status).toBe(404);
    expect((await stack.http.post(`/v1/api-keys/${managedKey(other).id}/regenerate`).set(bearer(m.token)).send({})).status).toBe(404);

    const viewer = await member(m, 'VIEWER');
    const denied = await stack.http.post(`/v1/api-keys/${managedKey(m).id}/regenerate`).set(bearer(viewer)).send({});
    expect(denied.status).toBe(403);
    expect(denied.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'account:api:key:update' });
    expect((await stack.http.post(`/v1/api-keys/${managedKey(m).id}/regenerate`).set(bearer(m.publishableKey)).send({})).status).toBe(403);
    const body = await stack.http.post(`/v1/api-keys/${managedKey(m).id}/regenerate`).set(bearer(m.secretKey)).send({ key: 'mine' });
    expect(body.status).toBe(400);

    const pk = managedKey(m, 'PUBLISHABLE');
    await stack.http.delete(`/v1/api-keys/${pk.id}`).set(bearer(m.token)).expect(200);
    const deleted = await stack.http.post(`/v1/api-keys/${pk.id}/regenerate`).set(bearer(m.token)).send({});
    expect(deleted.status).toBe(404);
  });

  it('answers 409 while a rotation with the same number is running, and runs it again once that one failed', async () => {
    const m = await createMerchant(stack);
    const managed = managedKey(m);
    const client = await stack.deps.temporal();
    // A rotation run nobody picks up, standing in for one still in progress.
    const stuck = await client.workflow.start('apiKeyRotationWorkflow', {
      workflowId: `api-key-rotation/${managed.id}/1`,
      taskQueue: 'nobody-polls-this',
      args: [{ keyId: managed.id, rotation: 1, newKeyHash: 'x', newKeyPrefix: 'x', newKeyLast4: 'x', actor: { type: 'test', id: 'test' } }],
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
    });
    const res = await stack.http.post(`/v1/api-keys/${managed.id}/regenerate`).set(bearer(m.secretKey)).send({});
    expect(res.status).toBe(409);
    expect(res.body.error.details.reason).toBe('conflict');
    expect(await canList(m.secretKey)).toBe(200);

    await stuck.terminate('test over');
    const retry = await stack.http.post(`/v1/api-keys/${managed.id}/regenerate`).set(bearer(m.secretKey)).send({});
    expect(retry.status).toBe(200);
    expect(await canList(retry.body.data.key)).toBe(200);
  });

  it('lets concurrent regenerates either win or get 409, leaving exactly one working value', async () => {
    const m = await createMerchant(stack);
    const managed = managedKey(m);
    const results = await Promise.all(Array.from({ length: 5 }, () =>
      stack.http.post(`/v1/api-keys/${managed.id}/regenerate`).set(bearer(m.token)).send({})));
    const statuses = results.map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    const won = results.filter((r) => r.status === 200);
    expect(won.length).toBeGreaterThanOrEqual(1);
    for (const lost of results.filter((r) => r.status === 409)) expect(lost.body.error.details.reason).toBe('conflict');
    const working = [];
    for (const r of won) if ((await canList(r.body.data.key)) === 200) working.push(r.body.data.key);
    expect(working).toHaveLength(1);
    expect(await canList(m.secretKey)).toBe(401);
    expect((await stack.db('core.api_keys').where({ id: managed.id }).first()).rotation_count).toBe(won.length);
  });
});

// Nobody may obtain a credential with more rights than they hold: not by creating a key, not by
// regenerating one.

describe('no escalation: regenerating a managed key', () => {
  it('refuses a DEVELOPER the managed secret key, which keeps working', async () => {
    const m = await createMerchant(stack);
    const res = await regenerate(m, await member(m, 'DEVELOPER'));
    expectDenied(res);
    expect(res.body.error.details.required).toContain('account:api:key:delete');
    expect(await canList(m.secretKey)).toBe(200);
    expect((await stack.db('core.api_keys').where({ id: managedKey(m).id }).first()).rotation_count).toBe(0);
  });

  it('refuses a DEVELOPER the managed publishable key too: rotating revokes the merchant\'s live value', async () => {
    const m = await createMerchant(stack);
    expectDenied(await regenerate(m, await member(m, 'DEVELOPER'), 'PUBLISHABLE'));
    expect((await stack.http.get('/v1/payments/pay_01NOPE').set(bearer(m.publishableKey))).status).toBe(404);
  });

  it('refuses a custom key holding only account:api:key:update', async () => {
    const m = await createMerchant(stack);
    const narrow = await customKey(m, { 'account:api:key': ['update'] });
    const res = await regenerate(m, narrow);
    expectDenied(res);
    expect(res.body.error.details.required).toEqual(expect.arrayContaining(['account:api:key:delete', 'payment:create', 'account:membership:create']));
    expect(await canList(m.secretKey)).toBe(200);
  });

  it('refuses a custom key whose permissions fall short of the key it would rotate', async () => {
    const m = await createMerchant(stack);
    const almost = await customKey(m, { 'account:api:key': ['read', 'update', 'delete'], payment: ['read'] });
    const res = await regenerate(m, almost, 'PUBLISHABLE');
    expectDenied(res);
    expect(res.body.error.details.required).toEqual(['payment:confirm']);
  });

  it('lets the managed secret key regenerate itself', async () => {
    const m = await createMerchant(stack);
    const res = await regenerate(m, m.secretKey);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await canList(m.secretKey)).toBe(401);
    expect(await canList(res.body.data.key)).toBe(200);
  });

  it('lets an OWNER and an ADMIN regenerate it', async () => {
    const m = await createMerchant(stack);
    const byOwner = await regenerate(m, m.token);
    expect(byOwner.status, JSON.stringify(byOwner.body)).toBe(200);
    const byAdmin = await regenerate(m, await member(m, 'ADMIN'));
    expect(byAdmin.status, JSON.stringify(byAdmin.body)).toBe(200);
    expect(await canList(byOwner.body.data.key)).toBe(401);
    expect(await canList(byAdmin.body.data.key)).toBe(200);
  });
});

describe('no escalation: creating a key', () => {
  it('refuses a publishable key to a creator without payment:read and payment:confirm', async () => {
    const m = await createMerchant(stack);
    const creator = await customKey(m, { 'account:api:key': ['create'] });
    const byDefault = await stack.http.post('/v1/api-keys').set(bearer(creator)).send({ name: 'web', type: 'PUBLISHABLE' });
    expectDenied(byDefault);
    expect(byDefault.body.error.details.required).toEqual(['payment:read', 'payment:confirm']);

    const reader = await customKey(m, { 'account:api:key': ['create'], payment: ['read'] });
    const explicit = await stack.http.post('/v1/api-keys').set(bearer(reader))
      .send({ name: 'web', type: 'PUBLISHABLE', permissions: { payment: ['read', 'confirm'] } });
    expectDenied(explicit);
    expect(explicit.body.error.details.required).toEqual(['payment:confirm']);
    const within = await stack.http.post('/v1/api-keys').set(bearer(reader))
      .send({ name: 'web', type: 'PUBLISHABLE', permissions: { payment: ['read'] } });
    expect(within.status, JSON.stringify(within.body)).toBe(201);
    expect(within.body.data.permissions).toEqual({ payment: ['read'] });
    expect(await stack.db('core.api_keys').where({ account_id: m.account.id, type: 'PUBLISHABLE' }).count().first()).toEqual({ count: 2 });
  });

  it('gives a publishable key to a creator who holds its permissions', async () => {
    const m = await createMerchant(stack);
    const creator = await customKey(m, { 'account:api:key': ['create'], payment: ['read', 'confirm'] });
    const res = await stack.http.post('/v1/api-keys').set(bearer(creator)).send({ name: 'web', type: 'PUBLISHABLE' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data.permissions).toEqual({ payment: ['read', 'confirm'] });
    const developer = await stack.http.post(`/v1/api-keys?account_id=${m.account.id}`).set(bearer(await member(m, 'DEVELOPER')))
      .send({ name: 'web', type: 'PUBLISHABLE' });
    expect(developer.status, JSON.stringify(developer.body)).toBe(201);
  });
});
