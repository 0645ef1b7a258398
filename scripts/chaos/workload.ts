import type { Config } from '../../lib/config';
import { signDevToken } from '../../lib/tokens';
import { Answer, RetryingClient } from './client';
import { sleep, until } from './processes';

/**
 * What the chaos suite's clients do: payments created and confirmed in one request, some authorized
 * only and then captured, some refunded (once, or twice to the full amount), some declined — every
 * request through the retrying client.
 */
export interface Merchant {
  accountId: string;
  secretKey: string;
  endpointId: string;
}

export type Kind = 'pay' | 'capture' | 'refund' | 'refund-twice' | 'decline';

/** One payment the clients drive, and what they learned of it. */
export interface PaymentRun {
  index: number;
  kind: Kind;
  amount: number;
  paymentId?: string;
  /** The status the clients last read (after PROCESSING has passed, when it did). */
  status?: string;
}

const APPROVED = '4242424242424242';
const DECLINED = '4000000000000002';

export function kindOf(index: number): Kind {
  if (index % 10 === 7) return 'decline';
  return (['pay', 'capture', 'refund', 'refund-twice', 'pay'] as const)[index % 5];
}

export const amountOf = (index: number) => 500 + ((index * 137) % 9_000);

function card(number: string) {
  return { type: 'CARD', card: { number, exp_month: 12, exp_year: new Date().getFullYear() + 3, cvc: '123' } };
}

function dataOf(answer: Answer, call: string): Record<string, unknown> {
  if (answer.status < 200 || answer.status >= 300 || !answer.body?.data) throw new Error(`${call}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body.data;
}

/**
 * An account with two sandbox provider configs (primary, then backup on cost, so a transport error on
 * the first cascades to the second) and a webhook endpoint on `receiverUrl` subscribed to every event,
 * enabled by its handshake.
 */
export async function setUpMerchant(client: RetryingClient, config: Config, receiverUrl: string, run: string): Promise<Merchant> {
  const user = signDevToken(config, { user: `usr_${run}`, workspace: `ws_${run}` });
  const system = signDevToken(config, { user: `usr_${run}_system`, system: true });
  const account = dataOf(await client.send('POST', '/accounts', user, { name: 'Chaos', country: 'US', currency: 'USD' }), 'create the account');
  const secretKey = (account.api_keys as { type: string; key: string }[]).find((k) => k.type === 'SECRET')!.key;
  const provider = dataOf(await client.send('POST', '/payment-providers', system, { name: 'Sandbox', identifier: 'sandbox' }), 'create the provider');
  const methods = provider.methods as { id: string }[];
  for (const [name, volume] of [['Primary', 2.9], ['Backup', 3.5]] as const) {
    const body = { payment_provider_id: provider.id, name, credentials: { api_key: `chaos_${name.toLowerCase()}_${run}` } };
    const ppc = dataOf(await client.send('POST', `/payment-provider-configs?account_id=${account.id}`, user, body), `create the ${name} config`);
    for (const method of methods) {
      const fee = { payment_provider_method_id: method.id, volume_fee: volume, fixed_fee: 30, fixed_fee_currency: 'USD' };
      dataOf(await client.send('POST', `/payment-provider-configs/${ppc.id}/fees`, user, fee), 'create a fee');
    }
  }
  const endpoint = dataOf(await client.send('POST', '/webhook-endpoints', secretKey, { url: receiverUrl, events: ['*'] }), 'create the webhook endpoint');
  const enabled = await until(async () => {
    const read = await client.send('GET', `/webhook-endpoints/${endpoint.id}`, secretKey);
    return read.body?.data?.status === 'enabled';
  }, 60_000, 500);
  if (!enabled) throw new Error('the webhook endpoint was not enabled by its handshake within 60 s');
  return { accountId: String(account.id), secretKey, endpointId: String(endpoint.id) };
}

/** Reads the payment until it has left PROCESSING (bounded by the client's own deadline). */
async function settled(client: RetryingClient, key: string, payment: Record<string, unknown>, stopAt: number): Promise<Record<string, unknown>> {
  let current = payment;
  while (current.status === 'PROCESSING' && Date.now() < stopAt) {
    await sleep(1_000);
    const read = await client.send('GET', `/payments/${current.id}`, key);
    if (read.status === 200 && read.body?.data) current = read.body.data;
  }
  return current;
}

/** One payment, start to end: create with confirm, then its capture or refunds. Idempotency keys are the run's. */
export async function drivePayment(client: RetryingClient, merchant: Merchant, run: PaymentRun, prefix: string, stopAt: number): Promise<void> {
  const key = merchant.secretKey;
  const created = await client.send('POST', '/payments', key, {
    amount: run.amount, currency: 'USD', confirm: true, auto_capture: run.kind !== 'capture',
    payment_method: card(run.kind === 'decline' ? DECLINED : APPROVED), metadata: { chaos_index: String(run.index) },
  }, `${prefix}-pay-${run.index}`);
  if (created.status !== 201 || !created.body?.data) return;
  run.paymentId = String(created.body.data.id);
  let payment = await settled(client, key, created.body.data, stopAt);
  run.status = String(payment.status);
  if (run.kind === 'capture' && payment.status === 'AUTHORIZED') {
    const captured = await client.send('POST', `/payments/${run.paymentId}/capture`, key, {}, `${prefix}-capture-${run.index}`);
    if (captured.status === 200 && captured.body?.data) payment = captured.body.data;
    run.status = String(payment.status);
  }
  if ((run.kind === 'refund' || run.kind === 'refund-twice') && payment.status === 'SUCCEEDED') {
    const first = Math.floor(run.amount * 0.4);
    const amounts = run.kind === 'refund' ? [first] : [first, run.amount - first];
    for (const [n, amount] of amounts.entries()) {
      await client.send('POST', '/refunds', key, { payment_id: run.paymentId, amount }, `${prefix}-refund-${run.index}-${n + 1}`);
    }
  }
}
