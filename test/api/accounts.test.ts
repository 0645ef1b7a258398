import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createMerchant, signToken, startStack, TestStack, unique } from '../support/stack';

let stack: TestStack;
beforeAll(async () => { stack = await startStack(); });
afterAll(async () => { await stack.close(); });

describe('accounts', () => {
  it('creates a production account with an owner membership and two managed keys shown once', async () => {
    const m = await createMerchant(stack);
    expect(m.account).toMatchObject({
      object: 'account', user_id: m.userId, workspace_id: m.workspaceId, name: 'Shop', country: 'US', currency: 'USD',
      timezone: 'America/New_York', environment: 'production', prod_account_id: null, settings: [], deleted: false, metadata: {},
    });
    expect(m.account.id).toMatch(/^acct_[0-9A-Z]{26}$/);
    expect(m.account.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(m.secretKey).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    expect(m.publishableKey).toMatch(/^pk_live_[0-9A-Za-z]{40}$/);
    expect(m.account.api_keys.every((k: any) => k.managed === true && k.status === 'ACTIVE')).toBe(true);
    const membership = await stack.db('core.account_memberships').where({ account_id: m.account.id }).first();
    expect(membership).toMatchObject({ user_id: m.userId, role: 'OWNER' });
    // Only a keyed hash is stored, never the plaintext.
    const stored = await stack.db('core.api_keys').where({ account_id: m.account.id });
    expect(JSON.stringify(stored)).not.toContain(m.secretKey);
  });

  it('creates a sandbox account linked to the caller\'s production account, with test keys', async () => {
    const prod = await createMerchant(stack);
    const sandbox = await createMerchant(stack, { sandboxOf: prod });
    expect(sandbox.account).toMatchObject({ environment: 'sandbox', prod_account_id: prod.account.id, workspace_id: prod.workspaceId });
    expect(sandbox.secretKey).toMatch(/^sk_test_/);
    expect(sandbox.publishableKey).toMatch(/^pk_test_/);
  });

  it('refuses sandbox_mode=true without prod_account_id', async () => {
    const m = await createMerchant(stack);
    const res = await stack.http.post('/v1/accounts?sandbox_mode=true').set(bearer(m.token)).send({ name: 'x' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, error: { code: 400, details: { reason: 'prod_account_id_required' } } });
  });

  it('refuses a sandbox linked to somebody else\'s production account', async () => {
    const owner = await createMerchant(stack);
    const stranger = signToken({ sub: unique('usr'), workspace_id: unique('ws') });
    const res = await stack.http.post(`/v1/accounts?sandbox_mode=true&prod_account_id=${owner.account.id}`).set(bearer(stranger)).send({ name: 'x' });
    expect(res.status).toBe(403);
    expect(res.body.error.details.reason).toBe('account_access_denied');
  });

  it('refuses a sandbox linked to another sandbox, and prod_account_id without sandbox_mode', async () => {
    const prod = await createMerchant(stack);
    const sandbox = await createMerchant(stack, { sandboxOf: prod });
    const nested = await stack.http.post(`/v1/accounts?sandbox_mode=true&prod_account_id=${sandbox.account.id}`).set(bearer(prod.token)).send({ name: 'x' });
    expect(nested.status).toBe(400);
    expect(nested.body.error.details.fields[0].path).toBe('query/prod_account_id');
    const stray = await stack.http.post(`/v1/accounts?prod_account_id=${prod.account.id}`).set(bearer(prod.token)).send({ name: 'x' });
    expect(stray.status).toBe(400);
  });

  it('validates the body: required name, codes, time zone, unknown fields', async () => {
    const m = await createMerchant(stack);
    const cases: [object, string, string][] = [
      [{}, 'validation_failed', 'body/name'],
      [{ name: 'x', currency: 'usd' }, 'validation_failed', 'body/currency'],
      [{ name: 'x', country: 'USA' }, 'validation_failed', 'body/country'],
      [{ name: 'x', timezone: 'Mars/Olympus' }, 'validation_failed', 'body/timezone'],
      [{ name: 'x', plan: 'gold' }, 'unknown_field', 'body/plan'],
      [{ name: 42 }, 'validation_failed', 'body/name'],
    ];
    for (const [body, reason, path] of cases) {
      const res = await stack.http.post('/v1/accounts').set(bearer(m.token)).send(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details.reason).toBe(reason);
      expect(res.body.error.details.fields.map((f: any) => f.path)).toContain(path);
    }
  });

  it('lists every account the user can access, production and sandbox, from the token alone', async () => {
    const prod = await createMerchant(stack);
    const sandbox = await createMerchant(stack, { sandboxOf: prod });
    const other = await createMerchant(stack);
    const res = await stack.http.get('/v1/accounts').set(bearer(prod.token));
    expect(res.status).toBe(200);
    const ids = res.body.data.map((a: any) => a.id);
    expect(ids).toEqual([sandbox.account.id, prod.account.id]);
    expect(ids).not.toContain(other.account.id);
    expect(res.body.data[0].api_keys).toBeUndefined();
    const withWorkspace = await stack.http.get(`/v1/accounts?workspace_id=${prod.workspaceId}`).set(bearer(prod.token));
    expect(withWorkspace.status).toBe(400);
    expect(withWorkspace.body.error.details.reason).toBe('unknown_field');
  });

  it('shows an API key only its own account', async () => {
    const m = await createMerchant(stack);
    const res = await stack.http.get('/v1/accounts').set(bearer(m.secretKey));
    expect(res.body.data.map((a: any) => a.id)).toEqual([m.account.id]);
  });

  it('gets one account, and hides accounts of others as 404', async () => {
    const m = await createMerchant(stack);
    const other = await createMerchant(stack);
    const mine = await stack.http.get(`/v1/accounts/${m.account.id}`).set(bearer(m.token));
    expect(mine.status).toBe(200);
    expect(mine.body.data.id).toBe(m.account.id);
    for (const credential of [m.token, m.secretKey]) {
      const theirs = await stack.http.get(`/v1/accounts/${other.account.id}`).set(bearer(credential));
      expect(theirs.status).toBe(404);
      expect(theirs.body.error.details.reason).toBe('not_found');
    }
    const junk = await stack.http.get('/v1/accounts/%27%3B%20drop%20table').set(bearer(m.token));
    expect(junk.status).toBe(404);
  });

  it('does not let API keys create accounts', async () => {
    const m = await createMerchant(stack);
    const res = await stack.http.post('/v1/accounts').set(bearer(m.secretKey)).send({ name: 'x' });
    expect(res.status).toBe(403);
    expect(res.body.error.details.reason).toBe('insufficient_permissions');
  });
});
