import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxCredentialsSchema } from '../../lib/providers/sandbox/credentials';
import { bearer, createMerchant, Merchant, signToken, startStack, TestStack, unique } from '../support/stack';
import { createProvider, systemToken } from '../support/routing';

let stack: TestStack;
let live: Merchant;
let sandbox: Merchant;
beforeAll(async () => {
  stack = await startStack();
  live = await createMerchant(stack);
  sandbox = await createMerchant(stack, { sandboxOf: live });
});
afterAll(async () => { await stack.close(); });

const ids = (res: { body: { data: { id: string }[] } }) => res.body.data.map((p) => p.id);

describe('POST /payment-providers', () => {
  it('registers a live provider with the adapter\'s default catalogue and credentials schema', async () => {
    const provider = await createProvider(stack);
    expect(provider).toMatchObject({
      object: 'payment_provider', name: 'Sandbox processor', identifier: 'sandbox', country: null, is_global: false, config: {},
    });
    expect(provider.id).toMatch(/^pp_[0-9A-Z]{26}$/);
    expect(provider.schemas.credentials).toEqual(JSON.parse(JSON.stringify(SandboxCredentialsSchema)));
    expect(provider.methods.map((m: any) => m.network).sort()).toEqual(['AMEX', 'DISCOVER', 'MASTERCARD', 'VISA']);
    for (const method of provider.methods) {
      expect(method).toMatchObject({
        object: 'payment_provider_method', payment_provider_id: provider.id, category: 'CARD', type: 'CREDIT_CARD', installments_supported: true,
      });
      expect(method.id).toMatch(/^ppm_/);
      expect(method.txn_mappings).toEqual([expect.objectContaining({
        object: 'payment_provider_method_txn_mapping', payment_provider_method_id: method.id, strategy: 'SDK', strategy_identifier: 'sandbox',
      })]);
    }
    expect(await stack.db('live.payment_providers').where({ id: provider.id }).first()).toBeDefined();
    expect(await stack.db('sandbox.payment_providers').where({ id: provider.id }).first()).toBeUndefined();
    expect(await stack.db('live.payment_provider_methods').where({ payment_provider_id: provider.id })).toHaveLength(4);
  });

  it('stores a provider in the sandbox environment with sandbox_mode=true', async () => {
    const provider = await createProvider(stack, { sandbox: true });
    expect(await stack.db('sandbox.payment_providers').where({ id: provider.id }).first()).toBeDefined();
    expect(await stack.db('live.payment_providers').where({ id: provider.id }).first()).toBeUndefined();
  });

  it('takes its own methods, txn mappings, credentials schema, config, country and is_global', async () => {
    const credentials = { type: 'object', required: ['merchant_id'], properties: { merchant_id: { type: 'string', pattern: '^m_' } } };
    const provider = await createProvider(stack, {
      body: {
        name: 'Acme', country: 'BR', is_global: true, config: { region: 'sa-east' },
        schemas: { credentials, docs: 'https://example.test' },
        methods: [
          { name: 'Visa debit', category: 'CARD', type: 'DEBIT_CARD', network: 'VISA' },
          {
            name: 'Elo credit', category: 'CARD', type: 'CREDIT_CARD', network: 'ELO', installments_supported: true,
            txn_mappings: [{ strategy: 'SDK', strategy_identifier: 'acme-elo', type: 'CARD_PAYMENT', capabilities: { refund: false } }],
          },
        ],
      },
    });
    expect(provider).toMatchObject({ name: 'Acme', country: 'BR', is_global: true, config: { region: 'sa-east' } });
    expect(provider.schemas).toEqual({ credentials, docs: 'https://example.test' });
    const debit = provider.methods.find((m: any) => m.network === 'VISA');
    expect(debit).toMatchObject({ type: 'DEBIT_CARD', installments_supported: false });
    // No mapping given: the adapter itself (SDK), with what it declares it can do.
    expect(debit.txn_mappings).toEqual([expect.objectContaining({
      strategy: 'SDK', strategy_identifier: 'sandbox', type: 'CARD_PAYMENT',
      capabilities: expect.objectContaining({ authorize: true, refund: true, installments: false }),
    })]);
    const elo = provider.methods.find((m: any) => m.network === 'ELO');
    expect(elo.txn_mappings).toEqual([{
      object: 'payment_provider_method_txn_mapping', payment_provider_method_id: elo.id, strategy: 'SDK', strategy_identifier: 'acme-elo',
      type: 'CARD_PAYMENT', capabilities: { refund: false },
    }]);
  });

  it('is for the system actor only', async () => {
    const body = { name: 'x', identifier: 'sandbox' };
    const user = signToken({ sub: unique('usr'), workspace_id: unique('ws') });
    for (const credential of [user, live.token, live.secretKey, sandbox.secretKey]) {
      const res = await stack.http.post('/v1/payment-providers').set(bearer(credential)).send(body);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ success: false, error: { code: 403, details: { reason: 'system_actor_required' } } });
    }
    const publishable = await stack.http.post('/v1/payment-providers').set(bearer(live.publishableKey)).send(body);
    expect(publishable.status).toBe(403);
    expect(publishable.body.error.details.reason).toBe('publishable_key_not_allowed');
    const anonymous = await stack.http.post('/v1/payment-providers').send(body);
    expect(anonymous.status).toBe(401);
  });

  it('refuses an identifier that names no built-in adapter with 422', async () => {
    const res = await stack.http.post('/v1/payment-providers').set(bearer(systemToken())).send({ name: 'x', identifier: 'stripe-ish' });
    expect(res.status).toBe(422);
    expect(res.body.error.details).toMatchObject({ reason: 'unknown_provider_adapter', identifier: 'stripe-ish', known: ['sandbox', 'stripe', 'adyen'] });
  });

  it('refuses a credentials schema that does not compile', async () => {
    for (const credentials of [{ type: 'object', properties: { a: { type: 'nope' } } }, 'string', { $ref: 'https://elsewhere.test/s.json' }]) {
      const res = await stack.http.post('/v1/payment-providers').set(bearer(systemToken()))
        .send({ name: 'x', identifier: 'sandbox', schemas: { credentials } });
      expect(res.status, JSON.stringify(credentials)).toBe(400);
      expect(res.body.error.details.reason).toBe('validation_failed');
      expect(res.body.error.details.fields[0].path).toBe('body/schemas/credentials');
    }
  });

  it('validates the body with field paths', async () => {
    const method = { name: 'm', category: 'CARD', type: 'CREDIT_CARD', network: 'VISA' };
    const cases: [object, string, string][] = [
      [{ identifier: 'sandbox' }, 'validation_failed', 'body/name'],
      [{ name: 'x' }, 'validation_failed', 'body/identifier'],
      [{ name: 'x', identifier: 'sandbox', country: 'usa' }, 'validation_failed', 'body/country'],
      [{ name: 'x', identifier: 'sandbox', methods: [] }, 'validation_failed', 'body/methods'],
      [{ name: 'x', identifier: 'sandbox', methods: [{ ...method, category: 'WALLET' }] }, 'validation_failed', 'body/methods/0/category'],
      [{ name: 'x', identifier: 'sandbox', methods: [{ ...method, type: 'PREPAID' }] }, 'validation_failed', 'body/methods/0/type'],
      [{ name: 'x', identifier: 'sandbox', methods: [{ ...method, network: 'visa' }] }, 'validation_failed', 'body/methods/0/network'],
      [{ name: 'x', identifier: 'sandbox', methods: [{ ...method, txn_mappings: [{ strategy: 'SDK', extra: 1 }] }] }, 'unknown_field', 'body/methods/0/txn_mappings/0/extra'],
      [{ name: 'x', identifier: 'sandbox', schemas: [] }, 'validation_failed', 'body/schemas'],
      [{ name: 'x', identifier: 'sandbox', region: 'eu' }, 'unknown_field', 'body/region'],
    ];
    for (const [body, reason, path] of cases) {
      const res = await stack.http.post('/v1/payment-providers').set(bearer(systemToken())).send(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details.reason, JSON.stringify(body)).toBe(reason);
      expect(res.body.error.details.fields.map((f: any) => f.path), JSON.stringify(body)).toContain(path);
    }
    const badQuery = await stack.http.post('/v1/payment-providers?sandbox_mode=maybe').set(bearer(systemToken())).send({ name: 'x', identifier: 'sandbox' });
    expect(badQuery.status).toBe(400);
    expect(badQuery.body.error.details.fields[0].path).toBe('query/sandbox_mode');
  });
});

describe('GET /payment-providers', () => {
  let liveProvider: any;
  let sandboxProvider: any;
  beforeAll(async () => {
    liveProvider = await createProvider(stack);
    sandboxProvider = await createProvider(stack, { sandbox: true });
  });

  it('lists the providers of a key\'s environment, with methods, and never the other environment\'s', async () => {
    const liveList = await stack.http.get('/v1/payment-providers').set(bearer(live.secretKey));
    expect(liveList.status).toBe(200);
    expect(ids(liveList)).toContain(liveProvider.id);
    expect(ids(liveList)).not.toContain(sandboxProvider.id);
    expect(liveList.body.data.find((p: any) => p.id === liveProvider.id).methods).toHaveLength(4);

    const sandboxList = await stack.http.get('/v1/payment-providers').set(bearer(sandbox.secretKey));
    expect(ids(sandboxList)).toContain(sandboxProvider.id);
    expect(ids(sandboxList)).not.toContain(liveProvider.id);
  });

  it('lists the named account\'s environment for a user token', async () => {
    const res = await stack.http.get(`/v1/payment-providers?account_id=${sandbox.account.id}`).set(bearer(live.token));
    expect(res.status).toBe(200);
    expect(ids(res)).toContain(sandboxProvider.id);
    expect(ids(res)).not.toContain(liveProvider.id);
    const consistent = await stack.http.get(`/v1/payment-providers?account_id=${sandbox.account.id}&sandbox_mode=true`).set(bearer(live.token));
    expect(consistent.status).toBe(200);
    const contradiction = await stack.http.get(`/v1/payment-providers?account_id=${live.account.id}&sandbox_mode=true`).set(bearer(live.token));
    expect(contradiction.status).toBe(400);
    expect(contradiction.body.error.details.fields[0].path).toBe('query/sandbox_mode');
    const withKey = await stack.http.get('/v1/payment-providers?sandbox_mode=true').set(bearer(live.secretKey));
    expect(withKey.status).toBe(400);
  });

  it('lets the system actor pick the environment with sandbox_mode', async () => {
    const liveList = await stack.http.get('/v1/payment-providers').set(bearer(systemToken()));
    expect(ids(liveList)).toContain(liveProvider.id);
    expect(ids(liveList)).not.toContain(sandboxProvider.id);
    const sandboxList = await stack.http.get('/v1/payment-providers?sandbox_mode=true').set(bearer(systemToken()));
    expect(ids(sandboxList)).toContain(sandboxProvider.id);
    expect(ids(sandboxList)).not.toContain(liveProvider.id);
  });

  it('answers 400 without account_id for a user, 403 for another\'s account or a publishable key, 401 without credentials', async () => {
    const noAccount = await stack.http.get('/v1/payment-providers').set(bearer(live.token));
    expect(noAccount.status).toBe(400);
    expect(noAccount.body.error.details.fields[0].path).toBe('query/account_id');
    const other = await createMerchant(stack);
    for (const credential of [live.token, live.secretKey]) {
      const res = await stack.http.get(`/v1/payment-providers?account_id=${other.account.id}`).set(bearer(credential));
      expect(res.status).toBe(403);
      expect(res.body.error.details.reason).toBe('account_access_denied');
    }
    const publishable = await stack.http.get('/v1/payment-providers').set(bearer(live.publishableKey));
    expect(publishable.status).toBe(403);
    expect(publishable.body.error.details.reason).toBe('publishable_key_not_allowed');
    expect((await stack.http.get('/v1/payment-providers')).status).toBe(401);
  });

  it('needs routing:read: a key without it is refused', async () => {
    const limited = await stack.db('core.api_keys').where({ account_id: live.account.id, type: 'SECRET' }).first();
    await stack.db('core.api_keys').where({ id: limited.id }).update({ permissions: JSON.stringify({ payment: ['read'] }) });
    stack.deps.auth.invalidate(); // the edit bypasses the API and its verified-key cache
    try {
      const res = await stack.http.get('/v1/payment-providers').set(bearer(live.secretKey));
      expect(res.status).toBe(403);
      expect(res.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'routing:read' });
    } finally {
      await stack.db('core.api_keys').where({ id: limited.id }).update({ permissions: JSON.stringify(limited.permissions) });
      stack.deps.auth.invalidate();
    }
  });

  it('is in the OpenAPI document', async () => {
    const doc = await stack.http.get('/v1/openapi.json');
    expect(Object.keys(doc.body.paths['/v1/payment-providers'])).toEqual(['post', 'get']);
    expect(doc.body.paths['/v1/payment-provider-configs/{id}/rules/{ruleId}']).toHaveProperty('patch');
    expect(doc.body.paths['/v1/routing-plans/{id}']).toHaveProperty('get');
  });
});
