import { expect } from 'vitest';
import { createSimulator, RunningSimulator, Simulator } from '../../simulator/server';
import { bearer, createMerchant, Merchant, TestStack } from './stack';
import { createConfig, createProvider } from './routing';

export const CARDS = {
  visa: '4242424242424242',
  mastercard: '5555555555554444',
  amex: '378282246310005',
  declined: '4000000000000002',
  insufficientFunds: '4000000000009995',
  expired: '4000000000000069',
  processingError: '4000000000000119',
} as const;

export function card(number: string) {
  return { type: 'CARD', card: { number, exp_month: 12, exp_year: new Date().getFullYear() + 2, cvc: number.startsWith('37') ? '1234' : '123' } };
}

export interface TestSimulator extends RunningSimulator {
  simulator: Simulator;
  /** Idempotency keys the processor saw for new authorizations (one per charge it created). */
  stats(): Promise<any>;
  key(key: string): Promise<any>;
}

export async function startSimulator(): Promise<TestSimulator> {
  const simulator = createSimulator();
  const running = await simulator.listen(0);
  return {
    ...running,
    simulator,
    stats: async () => (await fetch(`${running.url}/_inspect/stats`)).json(),
    key: async (key: string) => (await fetch(`${running.url}/_inspect/keys/${encodeURIComponent(key)}`)).json(),
  };
}

export interface PaymentsFixture {
  merchant: Merchant;
  provider: any;
  /** Cheapest first: routing ranks `primary` before `backup`. */
  primary: any;
  backup: any;
}

/**
 * A merchant with one sandbox-adapter provider and two configs: `primary` (2.9 % + 30) ranks before
 * `backup` (3.5 % + 30) on cost. Knobs go into a config's credentials.simulate.
 */
export async function paymentsFixture(stack: TestStack, knobs: { primary?: object; backup?: object } = {}): Promise<PaymentsFixture> {
  const merchant = await createMerchant(stack);
  const provider = await createProvider(stack);
  const primary = await createConfig(stack, merchant, provider.id, { name: 'Primary', credentials: { api_key: 'sim_primary_key_0001', ...(knobs.primary ? { simulate: knobs.primary } : {}) } });
  const backup = await createConfig(stack, merchant, provider.id, { name: 'Backup', credentials: { api_key: 'sim_backup_key_0002', ...(knobs.backup ? { simulate: knobs.backup } : {}) } });
  for (const [config, volume] of [[primary, 2.9], [backup, 3.5]] as const) {
    for (const method of provider.methods) {
      const res = await stack.http.post(`/v1/payment-provider-configs/${config.id}/fees`).set(bearer(merchant.token)).send({
        payment_provider_method_id: method.id, installment_count: 1, volume_fee: volume, fixed_fee: 30, fixed_fee_currency: 'USD',
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
  }
  return { merchant, provider, primary, backup };
}

export async function createPayment(stack: TestStack, m: Merchant, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  return stack.http.post('/v1/payments').set(bearer(m.secretKey)).set(headers).send({ amount: 1000, currency: 'USD', ...body });
}

export async function confirm(stack: TestStack, m: Merchant, paymentId: string, body: Record<string, unknown>) {
  return stack.http.post(`/v1/payments/${paymentId}/confirm`).set(bearer(m.secretKey)).send(body);
}

/** Creates and confirms a payment with a test card; returns the confirm response. */
export async function pay(stack: TestStack, m: Merchant, number: string, create: Record<string, unknown> = {}, confirmBody: Record<string, unknown> = {}) {
  const created = await createPayment(stack, m, create);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return confirm(stack, m, created.body.data.id, { payment_method: card(number), ...confirmBody });
}

/** A customer of `m` (secret key); returns its id. */
export async function newCustomer(stack: TestStack, m: Merchant): Promise<string> {
  const res = await stack.http.post('/v1/customers').set(bearer(m.secretKey)).send({ name: 'Customer', email: 'c@example.com' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.id;
}

/** A card saved to the customer; returns its pm_ id. */
export async function savedCard(stack: TestStack, m: Merchant, customerId: string, number: string = CARDS.visa): Promise<string> {
  const res = await stack.http.post(`/v1/customers/${customerId}/payment-methods`).set(bearer(m.secretKey)).send(card(number));
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.id;
}

export async function getPayment(stack: TestStack, m: Merchant, id: string, query = 'include_charges=true&include_routing_plans=true&include_events=true') {
  const res = await stack.http.get(`/v1/payments/${id}?${query}`).set(bearer(m.secretKey));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}
