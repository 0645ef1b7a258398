import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createMerchant, Merchant, signSystemToken, signToken, startStack, TestStack, unique } from '../support/stack';
import { createConfig, createProvider, systemToken } from '../support/routing';
import { up as grantManagedKeys } from '../../db/migrations/018_admin_permissions';

// Where live money settles (docs/security.md §15): who may set a live config's credentials, that a config's
// credentials are of its environment, and who registers the providers (and where they may send requests).

let stack: TestStack;
let live: Merchant;
let sandbox: Merchant;
let liveStripe: any;
let sandboxStripe: any;
let liveAdyen: any;
let sandboxAdyen: any;

const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
const adyen = (extra: Record<string, unknown> = {}) => ({ api_key: 'AQE_adyen_key_0001', merchant_account: 'ShopECOM', hmac_key: HMAC_KEY, ...extra });
const stripe = (secretKey: string) => ({ secret_key: secretKey, webhook_secret: 'whsec_credentials_0001' });

function registerProvider(body: Record<string, unknown>, sandboxMode = false, token = systemToken()) {
  return stack.http.post(`/v1/payment-providers${sandboxMode ? '?sandbox_mode=true' : ''}`).set(bearer(token)).send(body);
}

async function registered(body: Record<string, unknown>, sandboxMode = false) {
  const res = await registerProvider(body, sandboxMode);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

/** A token of a new member of the merchant's account with this role. */
async function member(m: Merchant, role: 'ADMIN' | 'DEVELOPER'): Promise<string> {
  const userId = unique('usr');
  const res = await stack.http.post(`/v1/account-memberships?account_id=${m.account.id}`).set(bearer(m.token)).send({ user_id: userId, role });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return signToken({ sub: userId, workspace_id: m.workspaceId });
}

/** A secret key of the merchant's account holding routing:read and routing:write only. */
async function routingKey(m: Merchant): Promise<string> {
  const res = await stack.http.post(`/v1/api-keys?account_id=${m.account.id}`).set(bearer(m.token))
    .send({ name: 'routing only', permissions: { routing: ['read', 'write'] } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.key;
}

const createAs = (credential: string, m: Merchant, body: Record<string, unknown>) =>
  stack.http.post(`/v1/payment-provider-configs?account_id=${m.account.id}`).set(bearer(credential)).send(body);

function expectNeedsCredentialsRight(res: { status: number; body: any; text: string }) {
  expect(res.status, res.text).toBe(403);
  expect(res.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'provider:credentials:write' });
}

function expectFieldRefused(res: { status: number; body: any; text: string }, path: string, message: RegExp) {
  expect(res.status, res.text).toBe(400);
  expect(res.body.error.details.reason).toBe('validation_failed');
  expect(res.body.error.details.fields).toEqual([{ path, message: expect.stringMatching(message) }]);
}

beforeAll(async () => {
  stack = await startStack();
  live = await createMerchant(stack);
  sandbox = await createMerchant(stack, { sandboxOf: live });
  liveStripe = await registered({ name: 'Stripe', identifier: 'stripe' });
  sandboxStripe = await registered({ name: 'Stripe', identifier: 'stripe' }, true);
  liveAdyen = await registered({ name: 'Adyen', identifier: 'adyen' });
  sandboxAdyen = await registered({ name: 'Adyen', identifier: 'adyen' }, true);
});
afterAll(async () => { await stack.close(); });

describe('a live config\'s credentials need provider:credentials:write', () => {
  it('lets OWNER and ADMIN create a live config, and refuses a DEVELOPER and a routing:write key', async () => {
    const provider = await createProvider(stack);
    const body = { payment_provider_id: provider.id, name: 'Mine', credentials: { api_key: 'sk_sim_attacker_0001' } };
    for (const credential of [await member(live, 'DEVELOPER'), await routingKey(live)]) {
      expectNeedsCredentialsRight(await createAs(credential, live, body));
    }
    expect(await stack.db('live.payment_provider_configs').where({ account_id: live.account.id, name: 'Mine' })).toHaveLength(0);
    expect((await createAs(live.token, live, body)).status).toBe(201);
    expect((await createAs(await member(live, 'ADMIN'), live, body)).status).toBe(201);
  });

  it('refuses a DEVELOPER a live config\'s new credentials, and lets it change the rest', async () => {
    const config = await createConfig(stack, live, liveStripe.id, { credentials: stripe('sk_live_owner_0001') });
    const developer = await member(live, 'DEVELOPER');
    const put = (credential: string, body: Record<string, unknown>) =>
      stack.http.put(`/v1/payment-provider-configs/${config.id}`).set(bearer(credential)).send(body);
    expectNeedsCredentialsRight(await put(developer, { credentials: stripe('sk_live_attacker_0001') }));
    expectNeedsCredentialsRight(await put(await routingKey(live), { name: 'Renamed', credentials: stripe('sk_live_attacker_0001') }));
    const renamed = await put(developer, { name: 'Renamed', merchant_capabilities: { recurring: true } });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data).toMatchObject({ name: 'Renamed', merchant_capabilities: { recurring: true } });
    const stored = await stack.db('live.payment_provider_configs').where({ id: config.id }).first();
    expect(stack.deps.vault.decryptJson<{ secret_key: string }>(stored.credentials_encrypted).secret_key).toBe('sk_live_owner_0001');
    expect((await put(live.token, { credentials: stripe('sk_live_owner_0002') })).status).toBe(200);
  });

  it('leaves sandbox configs to routing:write', async () => {
    const provider = await createProvider(stack, { sandbox: true });
    const body = { payment_provider_id: provider.id, name: 'Dev', credentials: { api_key: 'sk_sim_dev_0001' } };
    const created = await createAs(await member(sandbox, 'DEVELOPER'), sandbox, body);
    expect(created.status, created.text).toBe(201);
    const updated = await stack.http.put(`/v1/payment-provider-configs/${created.body.data.id}`).set(bearer(await routingKey(sandbox)))
      .send({ credentials: { api_key: 'sk_sim_dev_0002' } });
    expect(updated.status, updated.text).toBe(200);
  });
});

describe('migration 018', () => {
  it('gives existing managed secret keys (which hold every permission) the admin permissions, and no other key', async () => {
    const m = await createMerchant(stack);
    const narrow = await routingKey(m);
    const keys = () => stack.db('core.api_keys').where({ account_id: m.account.id }).select('id', 'managed', 'type', 'permissions');
    const managedSecret = (await keys()).find((k) => k.managed && k.type === 'SECRET');
    // As a key made before the permission existed.
    await stack.db('core.api_keys').where({ id: managedSecret.id })
      .update({ permissions: stack.db.raw(`permissions - 'provider:credentials' - 'account:settings' - 'audit'`) });
    stack.deps.auth.invalidate();
    const provider = await createProvider(stack);
    const body = { payment_provider_id: provider.id, name: 'Old key', credentials: { api_key: 'sk_sim_old_0001' } };
    expectNeedsCredentialsRight(await createAs(m.secretKey, m, body));

    await grantManagedKeys(stack.db);
    stack.deps.auth.invalidate();
    const after = await keys();
    expect(after.find((k) => k.id === managedSecret.id).permissions).toMatchObject({
      'provider:credentials': ['write'], 'account:settings': ['write'], audit: ['read'],
    });
    for (const key of after.filter((k) => !(k.managed && k.type === 'SECRET'))) {
      for (const scope of ['provider:credentials', 'account:settings', 'audit']) expect(key.permissions).not.toHaveProperty(scope);
    }
    expect((await createAs(m.secretKey, m, body)).status).toBe(201);
    expectNeedsCredentialsRight(await createAs(narrow, m, body));
  });
});

describe('a config\'s credentials are of its environment', () => {
  it('stripe: a live config refuses a test key (create and swap), a sandbox config a live one; restricted keys count', async () => {
    const testKey = /must be a live key/;
    expectFieldRefused(await createAs(live.token, live, { payment_provider_id: liveStripe.id, name: 'x', credentials: stripe('sk_test_swap_0001') }), 'body/credentials/secret_key', testKey);
    expectFieldRefused(await createAs(live.token, live, { payment_provider_id: liveStripe.id, name: 'x', credentials: stripe('rk_test_swap_0001') }), 'body/credentials/secret_key', testKey);
    const config = await createConfig(stack, live, liveStripe.id, { credentials: stripe('rk_live_restricted_0001') });
    const swap = await stack.http.put(`/v1/payment-provider-configs/${config.id}`).set(bearer(live.token)).send({ credentials: stripe('sk_test_swap_0001') });
    expectFieldRefused(swap, 'body/credentials/secret_key', testKey);
    const stored = await stack.db('live.payment_provider_configs').where({ id: config.id }).first();
    expect(stack.deps.vault.decryptJson<{ secret_key: string }>(stored.credentials_encrypted).secret_key).toBe('rk_live_restricted_0001');
    expect(swap.text).not.toContain('sk_test_swap_0001');

    expectFieldRefused(await createAs(sandbox.token, sandbox, { payment_provider_id: sandboxStripe.id, name: 'x', credentials: stripe('rk_live_x_0001') }), 'body/credentials/secret_key', /must be a test key/);
    expect((await createAs(sandbox.token, sandbox, { payment_provider_id: sandboxStripe.id, name: 'x', credentials: stripe('rk_test_x_0001') })).status).toBe(201);
  });

  it('adyen: a live config needs its live_url_prefix, a sandbox config refuses one', async () => {
    expectFieldRefused(await createAs(live.token, live, { payment_provider_id: liveAdyen.id, name: 'x', credentials: adyen() }), 'body/credentials/live_url_prefix', /required in a live account/);
    const liveConfig = await createAs(live.token, live, { payment_provider_id: liveAdyen.id, name: 'x', credentials: adyen({ live_url_prefix: '1797a841fbb37ca7-ShopCompany' }) });
    expect(liveConfig.status, liveConfig.text).toBe(201);
    const prefixed = adyen({ live_url_prefix: '1797a841fbb37ca7-ShopCompany' });
    expectFieldRefused(await createAs(sandbox.token, sandbox, { payment_provider_id: sandboxAdyen.id, name: 'x', credentials: prefixed }), 'body/credentials/live_url_prefix', /must be absent in a sandbox account/);
    expect((await createAs(sandbox.token, sandbox, { payment_provider_id: sandboxAdyen.id, name: 'x', credentials: adyen() })).status).toBe(201);
  });
});

describe('payment providers are the platform\'s', () => {
  it('refuses a workspace\'s system token, and takes a platform token (one that names no workspace)', async () => {
    const workspaceToken = signSystemToken({ sub: unique('usr_sys'), workspace_id: live.workspaceId });
    const refused = await registerProvider({ name: 'Mine', identifier: 'stripe' }, false, workspaceToken);
    expect(refused.status, refused.text).toBe(403);
    expect(refused.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'platform_token' });
    expect(await stack.db('live.payment_providers').where({ name: 'Mine' })).toHaveLength(0);
    // The workspace's token still reads the list; the platform's registers.
    expect((await stack.http.get('/v1/payment-providers').set(bearer(workspaceToken))).status).toBe(200);
    expect((await registerProvider({ name: 'Mine', identifier: 'stripe' }, false, signSystemToken({ sub: unique('usr_sys') }))).status).toBe(201);
  });

  it('a platform token acts on no workspace\'s accounts', async () => {
    const platform = bearer(signSystemToken({ sub: unique('usr_sys') }));
    for (const res of [
      await stack.http.get('/v1/accounts').set(platform),
      await stack.http.get(`/v1/accounts/${live.account.id}`).set(platform),
      await stack.http.get(`/v1/payment-provider-configs?account_id=${live.account.id}`).set(platform),
    ]) {
      expect(res.status, res.text).toBe(403);
      expect(res.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'workspace_token' });
    }
  });

  it('outside the sandbox, an api_base must be one of the processor\'s own hosts', async () => {
    const cases: [identifier: string, apiBase: string][] = [
      ['stripe', 'https://evil.example.com'],
      ['stripe', 'https://api.stripe.com:8443'],
      ['stripe', 'https://api.stripe.com.evil.example.com'],
      ['adyen', 'https://checkout-test.adyen.com'],
      ['adyen', 'https://evil.example.com-checkout-live.adyenpayments.com'],
      ['adyen', 'https://api.stripe.com'],
    ];
    for (const [identifier, apiBase] of cases) {
      const res = await registerProvider({ name: 'Off list', identifier, config: { api_base: apiBase } });
      expectFieldRefused(res, 'body/config/api_base', /must be one of the processor's own hosts/);
    }
    await registered({ name: 'Stripe', identifier: 'stripe', config: { api_base: 'https://api.stripe.com' } });
    await registered({ name: 'Adyen', identifier: 'adyen', config: { api_base: 'https://1797a841fbb37ca7-ShopCompany-checkout-live.adyenpayments.com' } });
    // The sandbox keeps its doubles and proxies.
    await registered({ name: 'Proxy', identifier: 'stripe', config: { api_base: 'https://evil.example.com' } }, true);
  });
});

describe('PROVIDER_API_BASE_EXTRA_HOSTS', () => {
  let extra: TestStack;
  beforeAll(async () => { extra = await startStack({ PROVIDER_API_BASE_EXTRA_HOSTS: 'proxy.internal:8443, 127.0.0.1' }); });
  afterAll(async () => { await extra?.close(); });

  it('adds the operator\'s hosts (and http:// on a listed loopback host) to every live allow-list', async () => {
    const register = (apiBase: string) => extra.http.post('/v1/payment-providers').set(bearer(systemToken()))
      .send({ name: 'Via proxy', identifier: 'stripe', config: { api_base: apiBase } });
    expect((await register('https://proxy.internal:8443')).status).toBe(201);
    expect((await register('http://127.0.0.1:12111')).status).toBe(201);
    expectFieldRefused(await register('https://proxy.internal:9443'), 'body/config/api_base', /own hosts/);
    expectFieldRefused(await register('http://proxy.internal:8443'), 'body/config/api_base', /must be https:\/\/ in live/);
  });
});
