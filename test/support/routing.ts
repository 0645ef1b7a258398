import { expect } from 'vitest';
import { bearer, Merchant, signSystemToken, TestStack, unique } from './stack';

/** A platform-scoped system token (no workspace): the only caller that may register payment providers. */
export function systemToken(): string {
  return signSystemToken({ sub: unique('usr_system') });
}

/** A `sandbox`-adapter provider with the default catalogue, in the sandbox or the live environment. */
export async function createProvider(stack: TestStack, opts: { sandbox?: boolean; body?: Record<string, unknown> } = {}) {
  const res = await stack.http.post(`/v1/payment-providers${opts.sandbox ? '?sandbox_mode=true' : ''}`)
    .set(bearer(systemToken()))
    .send({ name: 'Sandbox processor', identifier: 'sandbox', ...opts.body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

/** A provider config of the merchant's account, through the public API. */
export async function createConfig(stack: TestStack, m: Merchant, providerId: string, body: Record<string, unknown> = {}) {
  const res = await stack.http.post(`/v1/payment-provider-configs?account_id=${m.account.id}`).set(bearer(m.token))
    .send({ payment_provider_id: providerId, name: 'Primary', credentials: { api_key: 'sk_sim_primary_0001' }, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

/** A connector's provider (`stripe`, `adyen`) in the sandbox, pointed at a local double by `config.api_base`. */
export async function registerConnector(stack: TestStack, identifier: 'stripe' | 'adyen', apiBase: string) {
  return createProvider(stack, { sandbox: true, body: { name: identifier === 'adyen' ? 'Adyen' : 'Stripe', identifier, config: { api_base: apiBase } } });
}

/** Fees on every method of a config's provider: `volume` percent + 30 minor units (the cheaper config ranks first). */
export async function addFees(stack: TestStack, m: Merchant, config: { id: string }, provider: { methods: { id: string }[] }, volume: number) {
  for (const method of provider.methods) {
    const res = await stack.http.post(`/v1/payment-provider-configs/${config.id}/fees`).set(bearer(m.token)).send({
      payment_provider_method_id: method.id, installment_count: 1, volume_fee: volume, fixed_fee: 30, fixed_fee_currency: 'USD',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
}
