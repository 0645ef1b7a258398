import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logger } from '../../lib/logger';
import { loadProviderCredentials as loadConfigCredentials } from '../../db/provider-configs';
import { loadRoutingInputs } from '../../db/providers';
import { buildRoutingPlan } from '../../lib/routing/plan';
import { DEFAULT_ROUTING_SETTINGS } from '../../lib/routing/adaptive-contract';
import { bearer, createMerchant, Merchant, startStack, TestStack } from '../support/stack';
import { createConfig, createProvider } from '../support/routing';

let stack: TestStack;
let live: Merchant;
let sandbox: Merchant;
let other: Merchant;
let provider: any;
let sandboxProvider: any;
beforeAll(async () => {
  stack = await startStack();
  live = await createMerchant(stack);
  sandbox = await createMerchant(stack, { sandboxOf: live });
  other = await createMerchant(stack);
  provider = await createProvider(stack);
  sandboxProvider = await createProvider(stack, { sandbox: true });
});
afterAll(async () => { await stack.close(); });

const SECRET = 'sk_sim_SUPERSECRET_zq81';
const method = (p: any, network: string) => p.methods.find((m: any) => m.network === network).id as string;

describe('provider configs', () => {
  it('creates a config with credentials encrypted at rest and masked in the response', async () => {
    const res = await stack.http.post(`/v1/payment-provider-configs?account_id=${live.account.id}`).set(bearer(live.token)).send({
      payment_provider_id: provider.id, name: 'Primary', merchant_capabilities: { recurring: true },
      credentials: { api_key: SECRET, simulate: { outage: false, latency_ms: 25 } },
    });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      object: 'payment_provider_config', account_id: live.account.id, payment_provider_id: provider.id, name: 'Primary',
      credentials: { api_key: '••••zq81', simulate: { outage: false, latency_ms: 25 } },
      merchant_capabilities: { recurring: true }, deleted: false, fees: [], routing_rules: [],
    });
    expect(res.body.data.id).toMatch(/^ppc_[0-9A-Z]{26}$/);
    expect(JSON.stringify(res.body)).not.toContain('SUPERSECRET');

    const row = await stack.db('live.payment_provider_configs').where({ id: res.body.data.id }).first();
    expect(JSON.stringify(row)).not.toContain('SUPERSECRET');
    expect(row.credentials_encrypted).toMatch(/^v\d+\./);
    expect(await loadConfigCredentials(stack.db, stack.deps.vault, 'production', row.id))
      .toEqual({ api_key: SECRET, simulate: { outage: false, latency_ms: 25 } });
  });

  it('masks short strings entirely, and numbers and booleans outside simulate', async () => {
    const custom = await createProvider(stack, { body: { schemas: { credentials: { type: 'object' } } } });
    const config = await createConfig(stack, live, custom.id, {
      credentials: { api_key: 'short', pin: 1234, live: true, nested: { token: 'abcdefghijklmnop' }, list: ['abcdefghijklmnopq'], none: null },
    });
    expect(config.credentials).toEqual({
      api_key: '••••', pin: '••••', live: '••••', nested: { token: '••••mnop' }, list: ['••••nopq'], none: null,
    });
  });

  it('validates credentials against the provider\'s schema, with paths under body/credentials and no values echoed', async () => {
    const cases: [object, string][] = [
      [{}, 'body/credentials/api_key'],
      [{ api_key: '' }, 'body/credentials/api_key'],
      [{ api_key: 'k', region: 'eu-SECRETISH' }, 'body/credentials/region'],
      [{ api_key: 'k', simulate: { decline_rate: 2 } }, 'body/credentials/simulate/decline_rate'],
      [{ api_key: 'k', simulate: { meteor: true } }, 'body/credentials/simulate/meteor'],
    ];
    for (const [credentials, path] of cases) {
      const res = await stack.http.post(`/v1/payment-provider-configs?account_id=${live.account.id}`).set(bearer(live.token))
        .send({ payment_provider_id: provider.id, name: 'x', credentials });
      expect(res.status, JSON.stringify(credentials)).toBe(400);
      expect(res.body.error.details.reason).toBe('validation_failed');
      expect(res.body.error.details.fields.map((f: any) => f.path), JSON.stringify(credentials)).toContain(path);
    }
    const notObject = await stack.http.post(`/v1/payment-provider-configs?account_id=${live.account.id}`).set(bearer(live.token))
      .send({ payment_provider_id: provider.id, name: 'x', credentials: 'sk_plain_SECRETISH' });
    expect(notObject.status).toBe(400);
    expect(notObject.body.error.details.fields[0].path).toBe('body/credentials');
    expect(JSON.stringify(notObject.body)).not.toContain('SECRETISH');
  });

  it('uses a provider\'s own credentials schema', async () => {
    const acme = await createProvider(stack, {
      body: { schemas: { credentials: { type: 'object', required: ['merchant_id'], properties: { merchant_id: { type: 'string', pattern: '^m_' } } } } },
    });
    const bad = await stack.http.post(`/v1/payment-provider-configs?account_id=${live.account.id}`).set(bearer(live.token))
      .send({ payment_provider_id: acme.id, name: 'x', credentials: { merchant_id: 'nope' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields[0]).toMatchObject({ path: 'body/credentials/merchant_id' });
    const good = await createConfig(stack, live, acme.id, { credentials: { merchant_id: 'm_12345678901234' } });
    expect(good.credentials).toEqual({ merchant_id: '••••1234' });
  });

  it('answers 404 for a provider that does not exist or lives in the other environment', async () => {
    for (const [m, providerId] of [[live, 'pp_01NOTAREALPROVIDER0000000'], [live, sandboxProvider.id], [sandbox, provider.id]] as const) {
      const res = await stack.http.post(`/v1/payment-provider-configs?account_id=${m.account.id}`).set(bearer(m.token))
        .send({ payment_provider_id: providerId, name: 'x', credentials: { api_key: 'k' } });
      expect(res.status).toBe(404);
      expect(res.body.error.details.reason).toBe('not_found');
    }
  });

  it('creates sandbox configs in the sandbox environment, from a user token or a sandbox key', async () => {
    const viaToken = await createConfig(stack, sandbox, sandboxProvider.id);
    const viaKey = await stack.http.post('/v1/payment-provider-configs').set(bearer(sandbox.secretKey))
      .send({ payment_provider_id: sandboxProvider.id, name: 'Via key', credentials: { api_key: 'k' } });
    expect(viaKey.status).toBe(201);
    expect(viaKey.body.data.account_id).toBe(sandbox.account.id);
    for (const id of [viaToken.id, viaKey.body.data.id]) {
      expect(await stack.db('sandbox.payment_provider_configs').where({ id }).first()).toBeDefined();
      expect(await stack.db('live.payment_provider_configs').where({ id }).first()).toBeUndefined();
    }
  });

  it('refuses to act for an account that is not the caller\'s', async () => {
    const body = { payment_provider_id: provider.id, name: 'x', credentials: { api_key: 'k' } };
    for (const credential of [live.token, live.secretKey]) {
      const create = await stack.http.post(`/v1/payment-provider-configs?account_id=${other.account.id}`).set(bearer(credential)).send(body);
      expect(create.status).toBe(403);
      expect(create.body.error.details.reason).toBe('account_access_denied');
      const list = await stack.http.get(`/v1/payment-provider-configs?account_id=${other.account.id}`).set(bearer(credential));
      expect(list.status).toBe(403);
    }
    const noAccount = await stack.http.post('/v1/payment-provider-configs').set(bearer(live.token)).send(body);
    expect(noAccount.status).toBe(400);
    expect(noAccount.body.error.details.fields[0].path).toBe('query/account_id');
    const publishable = await stack.http.get('/v1/payment-provider-configs').set(bearer(live.publishableKey));
    expect(publishable.status).toBe(403);
    expect(publishable.body.error.details.reason).toBe('publishable_key_not_allowed');
  });

  it('lets a VIEWER read but not write (routing:read vs routing:write)', async () => {
    const viewer = await createMerchant(stack);
    await stack.db('core.account_memberships').insert({ id: `mem_${Date.now()}v`, account_id: live.account.id, user_id: viewer.userId, role: 'VIEWER' });
    const config = await createConfig(stack, live, provider.id);
    const read = await stack.http.get(`/v1/payment-provider-configs/${config.id}`).set(bearer(viewer.token));
    expect(read.status).toBe(200);
    const write = await stack.http.put(`/v1/payment-provider-configs/${config.id}`).set(bearer(viewer.token)).send({ name: 'y' });
    expect(write.status).toBe(403);
    expect(write.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'routing:write' });
    const create = await stack.http.post(`/v1/payment-provider-configs?account_id=${live.account.id}`).set(bearer(viewer.token))
      .send({ payment_provider_id: provider.id, name: 'x', credentials: { api_key: 'k' } });
    expect(create.status).toBe(403);
  });

  it('lists the account\'s configs, newest first, without deleted ones or other accounts\'', async () => {
    const m = await createMerchant(stack);
    const first = await createConfig(stack, m, provider.id, { name: 'First' });
    const second = await createConfig(stack, m, provider.id, { name: 'Second' });
    const gone = await createConfig(stack, m, provider.id, { name: 'Gone' });
    await createConfig(stack, other, provider.id);
    expect((await stack.http.delete(`/v1/payment-provider-configs/${gone.id}`).set(bearer(m.token))).status).toBe(200);
    const res = await stack.http.get(`/v1/payment-provider-configs?account_id=${m.account.id}`).set(bearer(m.token));
    expect(res.status).toBe(200);
    expect(res.body.data.map((c: any) => c.id)).toEqual([second.id, first.id]);
    const viaKey = await stack.http.get('/v1/payment-provider-configs').set(bearer(m.secretKey));
    expect(viaKey.body.data.map((c: any) => c.id)).toEqual([second.id, first.id]);
  });

  it('gets a config by id, and hides other accounts\' and the other environment\'s configs as 404', async () => {
    const mine = await createConfig(stack, live, provider.id);
    const theirs = await createConfig(stack, other, provider.id);
    const sandboxConfig = await createConfig(stack, sandbox, sandboxProvider.id);
    expect((await stack.http.get(`/v1/payment-provider-configs/${mine.id}`).set(bearer(live.secretKey))).body.data.id).toBe(mine.id);
    // A user token sees the configs of both of its environments.
    expect((await stack.http.get(`/v1/payment-provider-configs/${sandboxConfig.id}`).set(bearer(live.token))).status).toBe(200);
    const hidden: [string, string][] = [
      [live.token, theirs.id], [live.secretKey, theirs.id],
      [live.secretKey, sandboxConfig.id], [sandbox.secretKey, mine.id],
      [live.token, 'ppc_01NOSUCHCONFIG00000000000'], [live.token, 'not-an-id'],
    ];
    for (const [credential, id] of hidden) {
      const res = await stack.http.get(`/v1/payment-provider-configs/${id}`).set(bearer(credential));
      expect(res.status, id).toBe(404);
      expect(res.body.error.details.reason).toBe('not_found');
    }
  });

  it('updates name, merchant capabilities and credentials (re-validated, replaced whole)', async () => {
    const config = await createConfig(stack, live, provider.id, { credentials: { api_key: 'sk_sim_original_0001', simulate: { outage: true } } });
    const res = await stack.http.put(`/v1/payment-provider-configs/${config.id}`).set(bearer(live.token))
      .send({ name: 'Renamed', merchant_capabilities: { moto: true }, credentials: { api_key: 'sk_sim_rotated_0002' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: config.id, name: 'Renamed', merchant_capabilities: { moto: true }, credentials: { api_key: '••••0002' } });
    expect(res.body.data.credentials.simulate).toBeUndefined();
    expect(Date.parse(res.body.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(config.updated_at));
    expect(await loadConfigCredentials(stack.db, stack.deps.vault, 'production', config.id)).toEqual({ api_key: 'sk_sim_rotated_0002' });

    const nameOnly = await stack.http.put(`/v1/payment-provider-configs/${config.id}`).set(bearer(live.secretKey)).send({ name: 'Again' });
    expect(nameOnly.body.data.credentials).toEqual({ api_key: '••••0002' });

    const cases: [object, string][] = [
      [{ credentials: { api_key: 'k', simulate: { outage: 'yes' } } }, 'body/credentials/simulate/outage'],
      [{ credentials: {} }, 'body/credentials/api_key'],
      [{ name: '' }, 'body/name'],
      [{}, 'body'],
      [{ payment_provider_id: provider.id }, 'body/payment_provider_id'],
    ];
    for (const [body, path] of cases) {
      const bad = await stack.http.put(`/v1/payment-provider-configs/${config.id}`).set(bearer(live.token)).send(body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.body.error.details.fields.map((f: any) => f.path), JSON.stringify(body)).toContain(path);
    }
    const theirs = await createConfig(stack, other, provider.id);
    const foreign = await stack.http.put(`/v1/payment-provider-configs/${theirs.id}`).set(bearer(live.token)).send({ name: 'mine now' });
    expect(foreign.status).toBe(404);
  });

  it('deletes softly: the config answers deleted, then is gone from reads, while its credentials stay loadable', async () => {
    const config = await createConfig(stack, live, provider.id, { credentials: { api_key: 'sk_sim_deleted_9999' } });
    const res = await stack.http.delete(`/v1/payment-provider-configs/${config.id}`).set(bearer(live.token));
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ object: 'payment_provider_config', id: config.id, deleted: true, credentials: { api_key: '••••9999' } });
    expect((await stack.http.get(`/v1/payment-provider-configs/${config.id}`).set(bearer(live.token))).status).toBe(404);
    expect((await stack.http.delete(`/v1/payment-provider-configs/${config.id}`).set(bearer(live.token))).status).toBe(404);
    expect((await stack.http.put(`/v1/payment-provider-configs/${config.id}`).set(bearer(live.token)).send({ name: 'x' })).status).toBe(404);
    expect((await stack.db('live.payment_provider_configs').where({ id: config.id }).first()).deleted).toBe(true);
    // Charges made through it must still be capturable and refundable.
    expect(await loadConfigCredentials(stack.db, stack.deps.vault, 'production', config.id)).toEqual({ api_key: 'sk_sim_deleted_9999' });
    await expect(loadConfigCredentials(stack.db, stack.deps.vault, 'sandbox', config.id)).rejects.toThrow(/not found/);
    const theirs = await createConfig(stack, other, provider.id);
    expect((await stack.http.delete(`/v1/payment-provider-configs/${theirs.id}`).set(bearer(live.secretKey))).status).toBe(404);
  });
});

describe('fees', () => {
  let config: any;
  beforeAll(async () => { config = await createConfig(stack, live, provider.id); });
  const feeUrl = () => `/v1/payment-provider-configs/${config.id}/fees`;

  it('adds a fee (installment_count defaults to 1) and embeds it in the config', async () => {
    const res = await stack.http.post(feeUrl()).set(bearer(live.token))
      .send({ payment_provider_method_id: method(provider, 'VISA'), volume_fee: 2.9, fixed_fee: 30, fixed_fee_currency: 'USD' });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      object: 'payment_provider_config_fee', payment_provider_config_id: config.id, payment_provider_method_id: method(provider, 'VISA'),
      installment_count: 1, volume_fee: 2.9, fixed_fee: 30, fixed_fee_currency: 'USD',
    });
    expect(res.body.data.id).toMatch(/^fee_/);
    const withInstallments = await stack.http.post(feeUrl()).set(bearer(live.secretKey))
      .send({ payment_provider_method_id: method(provider, 'VISA'), installment_count: 12, volume_fee: 4.25, fixed_fee: 0, fixed_fee_currency: 'USD' });
    expect(withInstallments.status).toBe(201);
    const got = await stack.http.get(`/v1/payment-provider-configs/${config.id}`).set(bearer(live.token));
    expect(got.body.data.fees.map((f: any) => f.id)).toEqual([withInstallments.body.data.id, res.body.data.id]);
  });

  it('answers 409 for a second fee on the same method and installment count', async () => {
    const body = { payment_provider_method_id: method(provider, 'AMEX'), volume_fee: 3.5, fixed_fee: 0, fixed_fee_currency: 'USD' };
    const first = await stack.http.post(feeUrl()).set(bearer(live.token)).send(body);
    expect(first.status).toBe(201);
    const again = await stack.http.post(feeUrl()).set(bearer(live.token)).send({ ...body, volume_fee: 3.1 });
    expect(again.status).toBe(409);
    expect(again.body.error.details).toEqual({ reason: 'fee_already_exists', fee_id: first.body.data.id });
  });

  it('validates fees with field paths, including that the method belongs to the config\'s provider', async () => {
    const other = await createProvider(stack);
    const ok = { payment_provider_method_id: method(provider, 'MASTERCARD'), volume_fee: 1, fixed_fee: 10, fixed_fee_currency: 'EUR' };
    const cases: [object, string, string][] = [
      [{ ...ok, payment_provider_method_id: method(other, 'VISA') }, 'validation_failed', 'body/payment_provider_method_id'],
      [{ ...ok, payment_provider_method_id: 'ppm_01NOSUCHMETHOD000000000000' }, 'validation_failed', 'body/payment_provider_method_id'],
      [{ ...ok, installment_count: 0 }, 'validation_failed', 'body/installment_count'],
      [{ ...ok, installment_count: 49 }, 'validation_failed', 'body/installment_count'],
      [{ ...ok, installment_count: 2.5 }, 'validation_failed', 'body/installment_count'],
      [{ ...ok, volume_fee: 100.5 }, 'validation_failed', 'body/volume_fee'],
      [{ ...ok, volume_fee: -1 }, 'validation_failed', 'body/volume_fee'],
      [{ ...ok, volume_fee: 2.12345 }, 'validation_failed', 'body/volume_fee'],
      [{ ...ok, volume_fee: '2.9' }, 'validation_failed', 'body/volume_fee'],
      [{ ...ok, fixed_fee: -5 }, 'validation_failed', 'body/fixed_fee'],
      [{ ...ok, fixed_fee: 1.5 }, 'validation_failed', 'body/fixed_fee'],
      [{ ...ok, fixed_fee_currency: 'usd' }, 'validation_failed', 'body/fixed_fee_currency'],
      [{ volume_fee: 1, fixed_fee: 1, fixed_fee_currency: 'USD' }, 'validation_failed', 'body/payment_provider_method_id'],
      [{ ...ok, discount: 1 }, 'unknown_field', 'body/discount'],
    ];
    for (const [body, reason, path] of cases) {
      const res = await stack.http.post(feeUrl()).set(bearer(live.token)).send(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details.reason, JSON.stringify(body)).toBe(reason);
      expect(res.body.error.details.fields.map((f: any) => f.path), JSON.stringify(body)).toContain(path);
    }
  });

  it('deletes a fee, and answers 404 for a fee of another config or a config of another account', async () => {
    const fee = await stack.http.post(feeUrl()).set(bearer(live.token))
      .send({ payment_provider_method_id: method(provider, 'DISCOVER'), volume_fee: 2, fixed_fee: 0, fixed_fee_currency: 'USD' });
    const elsewhere = await createConfig(stack, live, provider.id);
    expect((await stack.http.delete(`/v1/payment-provider-configs/${elsewhere.id}/fees/${fee.body.data.id}`).set(bearer(live.token))).status).toBe(404);
    const theirs = await createConfig(stack, other, provider.id);
    const foreign = await stack.http.post(`/v1/payment-provider-configs/${theirs.id}/fees`).set(bearer(live.token))
      .send({ payment_provider_method_id: method(provider, 'VISA'), volume_fee: 2, fixed_fee: 0, fixed_fee_currency: 'USD' });
    expect(foreign.status).toBe(404);

    const res = await stack.http.delete(`${feeUrl()}/${fee.body.data.id}`).set(bearer(live.token));
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ object: 'payment_provider_config_fee', id: fee.body.data.id, deleted: true });
    expect((await stack.http.delete(`${feeUrl()}/${fee.body.data.id}`).set(bearer(live.token))).status).toBe(404);
  });
});

describe('routing rules', () => {
  let config: any;
  beforeAll(async () => { config = await createConfig(stack, live, provider.id); });
  const rulesUrl = () => `/v1/payment-provider-configs/${config.id}/rules`;
  const conditions = { currency: { in: ['USD', 'EUR'] }, amount: { gte: 1000, lt: 500000 }, 'card.network': { eq: 'VISA' } };

  it('creates, lists, updates and deletes rules', async () => {
    const created = await stack.http.post(rulesUrl()).set(bearer(live.token)).send({ conditions });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ object: 'payment_provider_config_routing_rule', payment_provider_config_id: config.id, conditions });
    expect(created.body.data.id).toMatch(/^rule_/);
    const nested = { any: [{ 'customer.country': { eq: 'BR' } }, { all: [{ installments: { gt: 1 } }, { 'metadata.tier': { neq: 'free' } }] }] };
    const second = await stack.http.post(rulesUrl()).set(bearer(live.secretKey)).send({ conditions: nested });
    expect(second.status).toBe(201);

    const list = await stack.http.get(rulesUrl()).set(bearer(live.token));
    expect(list.status).toBe(200);
    expect(list.body.data.map((r: any) => r.id)).toEqual([second.body.data.id, created.body.data.id]);
    const embedded = await stack.http.get(`/v1/payment-provider-configs/${config.id}`).set(bearer(live.token));
    expect(embedded.body.data.routing_rules.map((r: any) => r.id)).toEqual([second.body.data.id, created.body.data.id]);

    const patched = await stack.http.patch(`${rulesUrl()}/${created.body.data.id}`).set(bearer(live.token)).send({ conditions: { currency: { eq: 'BRL' } } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ id: created.body.data.id, conditions: { currency: { eq: 'BRL' } } });

    const deleted = await stack.http.delete(`${rulesUrl()}/${created.body.data.id}`).set(bearer(live.token));
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ success: true, data: { deleted: true, id: created.body.data.id } });
    expect((await stack.http.get(rulesUrl()).set(bearer(live.token))).body.data.map((r: any) => r.id)).toEqual([second.body.data.id]);
    expect((await stack.http.delete(`${rulesUrl()}/${created.body.data.id}`).set(bearer(live.token))).status).toBe(404);
    expect((await stack.http.patch(`${rulesUrl()}/${created.body.data.id}`).set(bearer(live.token)).send({ conditions })).status).toBe(404);
  });

  it('validates conditions on create and update, with paths under body/conditions', async () => {
    const rule = (await stack.http.post(rulesUrl()).set(bearer(live.token)).send({ conditions })).body.data;
    const cases: [unknown, string][] = [
      [{ amount: { gte: 'ten' } }, 'body/conditions/amount/gte'],
      [{ amount: { gte: 10.5 } }, 'body/conditions/amount/gte'],
      [{ colour: { eq: 'red' } }, 'body/conditions/colour'],
      [{ currency: { in: ['usd'] } }, 'body/conditions/currency/in/0'],
      [{ currency: { gt: 'USD' } }, 'body/conditions/currency/gt'],
      [{ amount: { between: [1, 2] } }, 'body/conditions/amount/between'],
      [{ any: [] }, 'body/conditions/any'],
      [{ all: [{ 'card.network': { eq: 'visa' } }] }, 'body/conditions/all/0/card.network/eq'],
      [[], 'body/conditions'],
      ['amount > 5', 'body/conditions'],
    ];
    for (const [bad, path] of cases) {
      for (const req of [
        stack.http.post(rulesUrl()).set(bearer(live.token)).send({ conditions: bad }),
        stack.http.patch(`${rulesUrl()}/${rule.id}`).set(bearer(live.token)).send({ conditions: bad }),
      ]) {
        const res = await req;
        expect(res.status, JSON.stringify(bad)).toBe(400);
        expect(res.body.error.details.reason).toBe('validation_failed');
        expect(res.body.error.details.fields.map((f: any) => f.path), JSON.stringify(bad)).toContain(path);
      }
    }
    const missing = await stack.http.post(rulesUrl()).set(bearer(live.token)).send({});
    expect(missing.body.error.details.fields[0].path).toBe('body/conditions');
    const extra = await stack.http.post(rulesUrl()).set(bearer(live.token)).send({ conditions, priority: 1 });
    expect(extra.body.error.details.reason).toBe('unknown_field');
    // The bad writes changed nothing.
    expect((await stack.http.get(rulesUrl()).set(bearer(live.token))).body.data.find((r: any) => r.id === rule.id).conditions).toEqual(conditions);
  });

  it('hides rules of other accounts\' and deleted configs, and rules of another config, as 404', async () => {
    const theirs = await createConfig(stack, other, provider.id);
    const theirRule = (await stack.http.post(`/v1/payment-provider-configs/${theirs.id}/rules`).set(bearer(other.token)).send({ conditions })).body.data;
    for (const credential of [live.token, live.secretKey]) {
      expect((await stack.http.get(`/v1/payment-provider-configs/${theirs.id}/rules`).set(bearer(credential))).status).toBe(404);
      expect((await stack.http.post(`/v1/payment-provider-configs/${theirs.id}/rules`).set(bearer(credential)).send({ conditions })).status).toBe(404);
      expect((await stack.http.delete(`/v1/payment-provider-configs/${theirs.id}/rules/${theirRule.id}`).set(bearer(credential))).status).toBe(404);
    }
    // Another config's rule through my config's path.
    expect((await stack.http.patch(`${rulesUrl()}/${theirRule.id}`).set(bearer(live.token)).send({ conditions })).status).toBe(404);
    const gone = await createConfig(stack, live, provider.id);
    await stack.http.delete(`/v1/payment-provider-configs/${gone.id}`).set(bearer(live.token));
    expect((await stack.http.get(`/v1/payment-provider-configs/${gone.id}/rules`).set(bearer(live.token))).status).toBe(404);
    const viewerless = await stack.http.get(rulesUrl()).set(bearer(live.publishableKey));
    expect(viewerless.status).toBe(403);
  });
});

describe('credentials never leave the vault', () => {
  it('appear in no response body and no log line of any endpoint', async () => {
    const marker = 'CANARY_7f3a9c_SECRET_VALUE';
    const bodies: unknown[] = [];
    // Capture what the logger writes (it is silent in tests) for the length of this test.
    const stream = (logger as any)[pino.symbols.streamSym] as { write(line: string): boolean };
    const write = stream.write;
    const level = logger.level;
    const lines: string[] = [];
    stream.write = (line: string) => { lines.push(line); return true; };
    logger.level = 'trace';
    let id: string | undefined;
    try {
      const record = async (req: PromiseLike<{ status: number; body: unknown; text: string }>) => {
        const res = await req;
        bodies.push(res.text);
        return res as any;
      };
      const m = await createMerchant(stack);
      const created = await record(stack.http.post(`/v1/payment-provider-configs?account_id=${m.account.id}`).set(bearer(m.token))
        .set('Idempotency-Key', 'canary-1')
        .send({ payment_provider_id: provider.id, name: 'Canary', credentials: { api_key: `${marker}_1234` } }));
      expect(created.status).toBe(201);
      id = created.body.data.id;
      await record(stack.http.post(`/v1/payment-provider-configs?account_id=${m.account.id}`).set(bearer(m.token))
        .set('Idempotency-Key', 'canary-1')
        .send({ payment_provider_id: provider.id, name: 'Canary', credentials: { api_key: `${marker}_1234` } }));
      await record(stack.http.post(`/v1/payment-provider-configs?account_id=${m.account.id}`).set(bearer(m.token))
        .send({ payment_provider_id: provider.id, name: 'Canary', credentials: { api_key: `${marker}_1234`, extra: marker } }));
      await record(stack.http.get(`/v1/payment-provider-configs?account_id=${m.account.id}`).set(bearer(m.token)));
      await record(stack.http.get(`/v1/payment-provider-configs/${id}`).set(bearer(m.secretKey)));
      await record(stack.http.put(`/v1/payment-provider-configs/${id}`).set(bearer(m.token)).send({ credentials: { api_key: `${marker}_5678` } }));
      await record(stack.http.put(`/v1/payment-provider-configs/${id}`).set(bearer(m.token)).send({ credentials: { api_key: 42, note: marker } }));
      await record(stack.http.post(`/v1/payment-provider-configs/${id}/fees`).set(bearer(m.token))
        .send({ payment_provider_method_id: method(provider, 'VISA'), volume_fee: 1, fixed_fee: 0, fixed_fee_currency: 'USD' }));
      await record(stack.http.post(`/v1/payment-provider-configs/${id}/rules`).set(bearer(m.token)).send({ conditions: { currency: { eq: 'USD' } } }));
      await record(stack.http.get(`/v1/payment-provider-configs/${id}/rules`).set(bearer(m.token)));
      await record(stack.http.delete(`/v1/payment-provider-configs/${id}`).set(bearer(m.token)));
    } finally {
      stream.write = write;
      logger.level = level;
    }
    expect(bodies).toHaveLength(11);
    for (const body of bodies) expect(body).not.toContain(marker);
    expect(lines.length).toBeGreaterThanOrEqual(11);
    for (const line of lines) expect(line).not.toContain(marker);
    const stored = await stack.db('core.idempotency_keys').where({ key: 'canary-1' });
    expect(JSON.stringify(stored)).not.toContain(marker);
    expect(JSON.stringify(await stack.db('live.payment_provider_configs').where({ id }))).not.toContain(marker);
  });
});

describe('loadRoutingInputs', () => {
  it('gives buildRoutingPlan the account\'s active configs, methods, fees and rules, and the routing settings, in one statement', async () => {
    const m = await createMerchant(stack);
    const cheap = await createConfig(stack, m, provider.id, { name: 'Cheap' });
    const pricey = await createConfig(stack, m, provider.id, { name: 'Pricey' });
    const euroOnly = await createConfig(stack, m, provider.id, { name: 'EUR only' });
    const deleted = await createConfig(stack, m, provider.id, { name: 'Deleted' });
    const fee = (config: any, volume: number) => stack.http.post(`/v1/payment-provider-configs/${config.id}/fees`).set(bearer(m.token))
      .send({ payment_provider_method_id: method(provider, 'VISA'), volume_fee: volume, fixed_fee: 30, fixed_fee_currency: 'USD' });
    await fee(cheap, 1.5);
    await fee(pricey, 3.5);
    await fee(euroOnly, 0.5);
    await stack.http.post(`/v1/payment-provider-configs/${euroOnly.id}/rules`).set(bearer(m.token)).send({ conditions: { currency: { eq: 'EUR' } } });
    await stack.http.delete(`/v1/payment-provider-configs/${deleted.id}`).set(bearer(m.token));
    const settings = await stack.http.put('/v1/routing-settings').set(bearer(m.secretKey)).send({ strategy: 'success_rate', elimination: { min_attempts: 7 } });
    expect(settings.status, JSON.stringify(settings.body)).toBe(200);

    const queries: string[] = [];
    const onQuery = (q: { sql: string }) => queries.push(q.sql);
    stack.db.on('query', onQuery);
    const inputs = await loadRoutingInputs(stack.db, 'production', m.account.id);
    stack.db.off('query', onQuery);
    // The configs with their providers and methods, the fees, rules and settings with them, and no
    // transaction around it (every confirm plans).
    expect(queries).toHaveLength(1);
    expect(queries[0]).toMatch(/^select/i);

    expect(inputs.configs.map((c) => c.id)).toEqual([cheap.id, pricey.id, euroOnly.id]);
    // Stored fields as set, the rest the defaults.
    expect(inputs.settings).toEqual({
      ...DEFAULT_ROUTING_SETTINGS, strategy: 'success_rate', elimination: { ...DEFAULT_ROUTING_SETTINGS.elimination, min_attempts: 7 },
    });
    expect(JSON.stringify(inputs)).not.toMatch(/credentials|api_key/);
    expect(inputs.providers).toHaveLength(1);
    expect(inputs.providers[0]).toMatchObject({ id: provider.id, identifier: 'sandbox' });
    expect(inputs.providers[0].methods).toHaveLength(4);
    expect(inputs.providers[0].methods.find((m) => m.network === 'VISA')).toEqual({
      id: method(provider, 'VISA'), payment_provider_id: provider.id, name: expect.any(String), category: expect.any(String), type: expect.any(String),
      network: 'VISA', installments_supported: expect.any(Boolean), txn_mappings: expect.any(Array),
    });
    expect(inputs.configs[0].fees[0]).toMatchObject({ volume_fee: 1.5, fixed_fee: 30, fixed_fee_currency: 'USD', installment_count: 1 });
    expect(inputs.configs[2].rules).toEqual([expect.objectContaining({ conditions: { currency: { eq: 'EUR' } } })]);

    const plan = buildRoutingPlan({
      payment: { amount: 10_000, currency: 'USD', installments: 1, card: { network: 'VISA' } },
      ...inputs,
    });
    expect(plan.candidates.map((c) => [c.payment_provider_config_id, c.estimated_fee])).toEqual([[cheap.id, 180], [pricey.id, 380]]);
    expect(plan.ineligible).toEqual([expect.objectContaining({ payment_provider_config_id: euroOnly.id, reason: 'rules_not_matched' })]);

    expect(await loadRoutingInputs(stack.db, 'sandbox', m.account.id)).toEqual({ configs: [], providers: [], settings: DEFAULT_ROUTING_SETTINGS });
  });
});
