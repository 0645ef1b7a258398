import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertApiKey } from '../../db/api-keys';
import { routingSettingsOf } from '../../db/routing-settings';
import { DEFAULT_ROUTING_SETTINGS } from '../../lib/routing/adaptive-contract';
import { bearer, createMerchant, Merchant, startStack, TestStack } from '../support/stack';
import { createConfig, createProvider } from '../support/routing';

let stack: TestStack;
let merchant: Merchant;
let other: Merchant;
/** Two configs of `merchant`, one deleted, and one of `other`. */
let configA: string;
let configB: string;
let deletedConfig: string;
let othersConfig: string;

beforeAll(async () => {
  stack = await startStack();
  merchant = await createMerchant(stack);
  other = await createMerchant(stack);
  const provider = await createProvider(stack);
  configA = (await createConfig(stack, merchant, provider.id, { name: 'A' })).id;
  configB = (await createConfig(stack, merchant, provider.id, { name: 'B' })).id;
  deletedConfig = (await createConfig(stack, merchant, provider.id, { name: 'Gone' })).id;
  const deleted = await stack.http.delete(`/v1/payment-provider-configs/${deletedConfig}`).set(bearer(merchant.token));
  expect(deleted.status).toBe(200);
  othersConfig = (await createConfig(stack, other, provider.id, { name: 'Theirs' })).id;
});
afterAll(async () => { await stack.close(); });

const get = (m: Merchant, key = m.secretKey) => stack.http.get('/v1/routing-settings').set(bearer(key));
const put = (m: Merchant, body: unknown, key = m.secretKey) => stack.http.put('/v1/routing-settings').set(bearer(key)).send(body as object);

function expectFields(res: { status: number; body: any }, reason: string, paths: string[]) {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error.details.reason).toBe(reason);
  expect(res.body.error.details.fields.map((f: { path: string }) => f.path)).toEqual(paths);
}

describe('GET /routing-settings', () => {
  it('answers the defaults for an account that never changed them', async () => {
    const fresh = await createMerchant(stack);
    const res = await get(fresh);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toEqual({ object: 'routing_settings', account_id: fresh.account.id, ...DEFAULT_ROUTING_SETTINGS, updated_at: null });
    // A user token names the account.
    const byUser = await stack.http.get(`/v1/routing-settings?account_id=${fresh.account.id}`).set(bearer(fresh.token));
    expect(byUser.body.data).toEqual(res.body.data);
  });

  it('needs account_id with a user token', async () => {
    const res = await stack.http.get('/v1/routing-settings').set(bearer(merchant.token));
    expectFields(res, 'validation_failed', ['query/account_id']);
  });
});

describe('PUT /routing-settings', () => {
  it('merges a partial change over the stored settings, section by section, and answers them as stored', async () => {
    const m = await createMerchant(stack);
    const first = await put(m, { strategy: 'success_rate', elimination: { min_attempts: 10, cool_down_seconds: 120 } });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.message).toBe('Routing settings updated');
    expect(first.body.data).toMatchObject({
      object: 'routing_settings',
      account_id: m.account.id,
      strategy: 'success_rate',
      success_rate: DEFAULT_ROUTING_SETTINGS.success_rate,
      volume_split: { allocations: [] },
      elimination: { ...DEFAULT_ROUTING_SETTINGS.elimination, min_attempts: 10, cool_down_seconds: 120 },
    });
    expect(Date.parse(first.body.data.updated_at)).toBeGreaterThan(Date.now() - 60_000);

    const second = await put(m, { success_rate: { window_minutes: 30, exploration_share: 0 } });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body.data).toMatchObject({
      strategy: 'success_rate',
      success_rate: { ...DEFAULT_ROUTING_SETTINGS.success_rate, window_minutes: 30, exploration_share: 0 },
      elimination: { ...DEFAULT_ROUTING_SETTINGS.elimination, min_attempts: 10, cool_down_seconds: 120 },
    });
    expect((await get(m)).body.data).toEqual(second.body.data);
    // What routing reads: the same, defaults filled.
    const { object: _o, account_id: _a, updated_at: _u, ...settings } = second.body.data;
    expect(await routingSettingsOf(stack.db, 'production', m.account.id)).toEqual(settings);

    // A full body replaces everything; an empty one changes nothing.
    const full = await put(m, DEFAULT_ROUTING_SETTINGS);
    expect(full.body.data).toMatchObject(DEFAULT_ROUTING_SETTINGS);
    const empty = await put(m, {});
    expect(empty.status).toBe(200);
    expect(empty.body.data).toMatchObject(DEFAULT_ROUTING_SETTINGS);
  });

  it('splits volume across the account\'s configs, and clears the split', async () => {
    const set = await put(merchant, {
      strategy: 'volume_split',
      volume_split: { allocations: [{ provider_config_id: configA, percent: 70 }, { provider_config_id: configB, percent: 30 }] },
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.data.volume_split.allocations).toEqual([{ provider_config_id: configA, percent: 70 }, { provider_config_id: configB, percent: 30 }]);
    // Other fields change without the split being given again.
    const other = await put(merchant, { elimination: { enabled: true } });
    expect(other.status, JSON.stringify(other.body)).toBe(200);
    expect(other.body.data).toMatchObject({ strategy: 'volume_split', elimination: { enabled: true } });
    expect(other.body.data.volume_split.allocations).toHaveLength(2);
    const cleared = await put(merchant, { strategy: 'least_cost', volume_split: { allocations: [] } });
    expect(cleared.status, JSON.stringify(cleared.body)).toBe(200);
    expect(cleared.body.data).toMatchObject({ strategy: 'least_cost', volume_split: { allocations: [] } });
  });

  it('keeps both of two partial changes made at once', async () => {
    const m = await createMerchant(stack);
    const changes = [
      { success_rate: { window_minutes: 45 } }, { elimination: { min_attempts: 9 } }, { strategy: 'success_rate' },
      { elimination: { probe_share: 0.25 } }, { success_rate: { prior_attempts: 20 } },
    ];
    const answers = await Promise.all(changes.map((body) => put(m, body)));
    expect(answers.map((r) => r.status)).toEqual(changes.map(() => 200));
    expect((await get(m)).body.data).toMatchObject({
      strategy: 'success_rate',
      success_rate: { window_minutes: 45, prior_attempts: 20 },
      elimination: { min_attempts: 9, probe_share: 0.25 },
    });
  });

  // Each refused body, with the reason and the field paths it is refused with.
  const A = () => configA;
  const B = () => configB;
  const allocations = (...list: [() => string, number][]) => ({ volume_split: { allocations: list.map(([id, percent]) => ({ provider_config_id: id(), percent })) } });
  it.each<[string, () => unknown, string, string[]]>([
    ['an unknown strategy', () => ({ strategy: 'fastest' }), 'validation_failed', ['body/strategy']],
    ['a share above 1', () => ({ success_rate: { exploration_share: 1.5 } }), 'validation_failed', ['body/success_rate/exploration_share']],
    ['a negative share', () => ({ elimination: { probe_share: -0.1 } }), 'validation_failed', ['body/elimination/probe_share']],
    ['a zero error-rate threshold', () => ({ elimination: { error_rate_threshold: 0 } }), 'validation_failed', ['body/elimination/error_rate_threshold']],
    ['an error-rate threshold above 1', () => ({ elimination: { error_rate_threshold: 1.01 } }), 'validation_failed', ['body/elimination/error_rate_threshold']],
    ['a window of 0 minutes', () => ({ success_rate: { window_minutes: 0 } }), 'validation_failed', ['body/success_rate/window_minutes']],
    ['a window over a day', () => ({ elimination: { window_minutes: 1441 } }), 'validation_failed', ['body/elimination/window_minutes']],
    ['a fractional window', () => ({ success_rate: { window_minutes: 1.5 } }), 'validation_failed', ['body/success_rate/window_minutes']],
    ['a cool-down of 0', () => ({ elimination: { cool_down_seconds: 0 } }), 'validation_failed', ['body/elimination/cool_down_seconds']],
    ['a cool-down over a day', () => ({ elimination: { cool_down_seconds: 86_401 } }), 'validation_failed', ['body/elimination/cool_down_seconds']],
    ['min_attempts of 0', () => ({ elimination: { min_attempts: 0 } }), 'validation_failed', ['body/elimination/min_attempts']],
    ['enabled as text', () => ({ elimination: { enabled: 'yes' } }), 'validation_failed', ['body/elimination/enabled']],
    ['a negative prior', () => ({ success_rate: { prior_attempts: -1 } }), 'validation_failed', ['body/success_rate/prior_attempts']],
    ['a section that is not an object', () => ({ elimination: true }), 'validation_failed', ['body/elimination']],
    ['an unknown field', () => ({ speed: 'max' }), 'unknown_field', ['body/speed']],
    ['an unknown field in a section', () => ({ elimination: { threshold: 0.5 } }), 'unknown_field', ['body/elimination/threshold']],
    ['more prior approvals than attempts', () => ({ success_rate: { prior_approvals: 11, prior_attempts: 10 } }), 'validation_failed', ['body/success_rate/prior_approvals']],
    ['prior approvals above the stored prior attempts', () => ({ success_rate: { prior_approvals: 20 } }), 'validation_failed', ['body/success_rate/prior_approvals']],
    ['a percent of 0', () => allocations([A, 0], [B, 100]), 'validation_failed', ['body/volume_split/allocations/0/percent']],
    ['a percent above 100', () => allocations([A, 101]), 'validation_failed', ['body/volume_split/allocations/0/percent']],
    ['a fractional percent', () => allocations([A, 50.5], [B, 49.5]), 'validation_failed', ['body/volume_split/allocations/0/percent', 'body/volume_split/allocations/1/percent']],
    ['an allocation without percent', () => ({ volume_split: { allocations: [{ provider_config_id: configA }] } }), 'validation_failed', ['body/volume_split/allocations/0/percent']],
    ['percents that do not sum to 100', () => allocations([A, 60], [B, 30]), 'validation_failed', ['body/volume_split/allocations']],
    ['volume_split without allocations', () => ({ strategy: 'volume_split' }), 'validation_failed', ['body/volume_split/allocations']],
    ['volume_split with no allocations', () => ({ strategy: 'volume_split', volume_split: { allocations: [] } }), 'validation_failed', ['body/volume_split/allocations']],
    ['a config twice', () => allocations([A, 50], [A, 50]), 'validation_failed', ['body/volume_split/allocations/1/provider_config_id']],
    ['a config that does not exist', () => allocations([() => 'ppc_nope', 100]), 'validation_failed', ['body/volume_split/allocations/0/provider_config_id']],
    ['a deleted config', () => allocations([A, 50], [() => deletedConfig, 50]), 'validation_failed', ['body/volume_split/allocations/1/provider_config_id']],
    ['another account\'s config', () => allocations([() => othersConfig, 100]), 'validation_failed', ['body/volume_split/allocations/0/provider_config_id']],
    ['every broken rule at once', () => ({
      strategy: 'volume_split',
      success_rate: { prior_approvals: 50 },
      volume_split: { allocations: [{ provider_config_id: othersConfig, percent: 40 }, { provider_config_id: othersConfig, percent: 40 }] },
    }), 'validation_failed', [
      'body/volume_split/allocations/0/provider_config_id', 'body/volume_split/allocations/1/provider_config_id',
      'body/success_rate/prior_approvals', 'body/volume_split/allocations',
    ]],
  ])('refuses %s, writing nothing', async (_name, body, reason, paths) => {
    const before = (await get(merchant)).body.data;
    expectFields(await put(merchant, body()), reason, paths);
    expect((await get(merchant)).body.data).toEqual(before);
  });

  it('tells what is wrong in the message of the first field', async () => {
    const sum = await put(merchant, { volume_split: { allocations: [{ provider_config_id: configA, percent: 60 }] } });
    expect(sum.body.error.details.fields).toEqual([{ path: 'body/volume_split/allocations', message: 'percents must sum to 100 (they sum to 60)' }]);
    const foreign = await put(merchant, { volume_split: { allocations: [{ provider_config_id: othersConfig, percent: 100 }] } });
    expect(foreign.body.error.details.fields).toEqual([{ path: 'body/volume_split/allocations/0/provider_config_id', message: 'is not a provider config of this account' }]);
    const prior = await put(merchant, { success_rate: { prior_approvals: 12 } });
    expect(prior.body.error.message).toBe('body/success_rate/prior_approvals: must be at most prior_attempts (10)');
  });
});

describe('who may read and change them', () => {
  it('keeps each account\'s settings to itself, and each environment\'s', async () => {
    const mine = await createMerchant(stack);
    const theirs = await createMerchant(stack);
    const sandbox = await createMerchant(stack, { sandboxOf: mine });
    expect((await put(mine, { strategy: 'success_rate' })).status).toBe(200);
    expect((await get(theirs)).body.data).toMatchObject({ account_id: theirs.account.id, strategy: 'least_cost', updated_at: null });
    expect((await get(sandbox)).body.data).toMatchObject({ account_id: sandbox.account.id, strategy: 'least_cost', updated_at: null });
    // Naming another account: 403, whatever the credential.
    const byKey = await stack.http.get(`/v1/routing-settings?account_id=${mine.account.id}`).set(bearer(theirs.secretKey));
    expect(byKey.status).toBe(403);
    expect(byKey.body.error.details.reason).toBe('account_access_denied');
    const byUser = await stack.http.put(`/v1/routing-settings?account_id=${mine.account.id}`).set(bearer(theirs.token)).send({ strategy: 'least_cost' });
    expect(byUser.status).toBe(403);
    expect(byUser.body.error.details.reason).toBe('account_access_denied');
    expect((await get(mine)).body.data.strategy).toBe('success_rate');
  });

  it('refuses publishable keys', async () => {
    for (const res of [await get(merchant, merchant.publishableKey), await put(merchant, { strategy: 'least_cost' }, merchant.publishableKey)]) {
      expect(res.status).toBe(403);
      expect(res.body.error.details.reason).toBe('publishable_key_not_allowed');
    }
  });

  it('reads with routing:read and changes with routing:write', async () => {
    const { plaintext: reader } = await insertApiKey(stack.db, stack.config.apiKeyPepper, {
      accountId: merchant.account.id, environment: 'production', type: 'SECRET', name: 'reader', managed: false, permissions: { routing: ['read'] },
    });
    expect((await get(merchant, reader)).status).toBe(200);
    const refused = await put(merchant, { strategy: 'least_cost' }, reader);
    expect(refused.status).toBe(403);
    expect(refused.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'routing:write' });
    const { plaintext: other } = await insertApiKey(stack.db, stack.config.apiKeyPepper, {
      accountId: merchant.account.id, environment: 'production', type: 'SECRET', name: 'payments', managed: false, permissions: { payment: ['read'] },
    });
    expect((await get(merchant, other)).body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'routing:read' });
  });
});
