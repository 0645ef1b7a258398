// The merchant every scenario pays as: an account with a sandbox-adapter provider config (0 ms processor
// latency) and a fee, and the ways to make one payment — ours through the API, and the floors' bare
// Temporal start-and-update — that the payment scenarios compare. Also the payment scenario's realistic
// merchant: a second account with two configs that cascade and a webhook endpoint.

import { WithStartWorkflowOperation, type Workflow } from '@temporalio/client';
import type { Config } from '../lib/config';
import { signDevToken } from '../lib/tokens';
import { FLOOR_TASK_QUEUE } from './floor/worker';
import { floorConfirm, floorLocalPaymentWorkflow, floorPaymentWorkflow } from './floor/workflows';
import { AccountAnswer, Answer, Api, apiClient, DECLINED_CARD, enabledEndpoint, ProviderAnswer, secretKeyOf, VISA } from './http';
import type { Stack } from './stack';

export interface Merchant {
  http: Api;
  /** A user's bearer (creates accounts and configs). */
  token: string;
  account: AccountAnswer;
  /** The account's secret key: what a merchant's server calls the API with. */
  key: string;
  provider: ProviderAnswer;
  /** One payment as a merchant's checkout makes it: create and confirm in one request; its id. */
  payOnce: () => Promise<string>;
  /** One payment on the old floor: a bare workflow started and updated in one call, its no-op call an activity. */
  floorOnce: () => Promise<void>;
  /** One payment on the floor: the same, its no-op call a local activity, as the engine makes its processor call. */
  floorLocalOnce: () => Promise<void>;
}

/** A provider config of `account` with the fee `volumeFee` % + 30 on every method of `provider`. */
async function providerConfig(http: Api, token: string, account: AccountAnswer, provider: ProviderAnswer, name: string, volumeFee: number, credentials: object) {
  const ppc = (await http.post(`/payment-provider-configs?account_id=${account.id}`, { payment_provider_id: provider.id, name, credentials }, token)).data;
  for (const m of provider.methods) {
    await http.post(`/payment-provider-configs/${ppc.id}/fees`, { payment_provider_method_id: m.id, volume_fee: volumeFee, fixed_fee: 30, fixed_fee_currency: 'USD' }, token);
  }
  return ppc;
}

export async function prepareMerchant(config: Config, stack: Stack): Promise<Merchant> {
  const token = signDevToken(config, { user: 'usr_bench', workspace: 'ws_bench' });
  const system = signDevToken(config, { user: 'usr_bench_system', system: true });
  const http = apiClient(stack.api);
  const post = http.post;
  const account = (await post<AccountAnswer>('/accounts', { name: 'Bench', country: 'US', currency: 'USD' }, token)).data;
  const key = secretKeyOf(account);
  const provider = (await post<ProviderAnswer>('/payment-providers', { name: 'Sandbox', identifier: 'sandbox' }, system)).data;
  await providerConfig(http, token, account, provider, 'Primary', 2.9, { api_key: 'bench' });
  const payOnce = async () => {
    const payment = (await post('/payments', { amount: 1000, currency: 'USD', confirm: true, payment_method: VISA }, key)).data;
    if (payment.status !== 'SUCCEEDED') throw new Error(`payment ended ${payment.status}`);
    return payment.id;
  };
  let floorSeq = 0;
  // The floors make their start and update in one call, as our create with confirm does.
  const floorOf = (workflow: Workflow) => async () => {
    await stack.client.workflow.executeUpdateWithStart(floorConfirm, {
      startWorkflowOperation: new WithStartWorkflowOperation(workflow, {
        taskQueue: FLOOR_TASK_QUEUE, workflowId: `floor/${Date.now()}/${floorSeq++}`, workflowIdConflictPolicy: 'FAIL',
      }),
    });
  };
  return { http, token, account, key, provider, payOnce, floorOnce: floorOf(floorPaymentWorkflow), floorLocalOnce: floorOf(floorLocalPaymentWorkflow) };
}

/** The realistic merchant (bench/payment.ts): its one payment with a card the mix chose, and how to take it down. */
export interface CascadingMerchant {
  account: AccountAnswer;
  /** Creates and confirms one payment; `declined` pays with a card every processor hard-declines. Its id and status. */
  pay: (declined: boolean) => Promise<Answer>;
  /** Deletes the webhook endpoint, so that no later scenario's events reach it. */
  close: () => Promise<void>;
}

/**
 * A second account of the bench's user, paying as a merchant with a fallback does: a primary config
 * (cheapest, so ranked first) whose processor soft-declines `softDeclineRate` of new authorizations
 * (`issuer_unavailable`, the simulator's knob passed in the config's credentials), a backup that approves
 * them, and one webhook endpoint at `hookUrl` subscribed to the payment's two ends. Answers once the
 * endpoint passed its handshake (the receiver must answer it).
 */
export async function prepareCascadingMerchant(base: Merchant, softDeclineRate: number, hookUrl: string): Promise<CascadingMerchant> {
  const { http, token, provider } = base;
  const account = (await http.post<AccountAnswer>('/accounts', { name: 'Bench cascading', country: 'US', currency: 'USD' }, token)).data;
  const key = secretKeyOf(account);
  await providerConfig(http, token, account, provider, 'Primary', 2.9, { api_key: 'bench_primary', simulate: { soft_decline_rate: softDeclineRate } });
  await providerConfig(http, token, account, provider, 'Backup', 3.5, { api_key: 'bench_backup' });
  const endpoint = await enabledEndpoint(http, key, hookUrl, ['payment_intent.succeeded', 'payment_intent.payment_failed']);
  return {
    account,
    pay: async (declined) => (await http.post('/payments', { amount: 1000, currency: 'USD', confirm: true, payment_method: declined ? DECLINED_CARD : VISA }, key)).data,
    close: async () => { await http.delete(`/webhook-endpoints/${endpoint.id}`, key); },
  };
}
