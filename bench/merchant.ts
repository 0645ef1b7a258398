// The merchant every scenario pays as: an account with a sandbox-adapter provider config (0 ms processor
// latency) and a fee, and the two ways to make one payment — ours through the API, and the floor's bare
// Temporal start-and-update — that the payment scenarios compare.

import { WithStartWorkflowOperation } from '@temporalio/client';
import type { Config } from '../lib/config';
import { signDevToken } from '../lib/tokens';
import { FLOOR_TASK_QUEUE } from './floor/worker';
import { floorConfirm, floorPaymentWorkflow } from './floor/workflows';
import { AccountAnswer, Api, apiClient, ProviderAnswer, secretKeyOf, VISA } from './http';
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
  /** One payment on the floor: a bare workflow started and updated in one call. */
  floorOnce: () => Promise<void>;
}

export async function prepareMerchant(config: Config, stack: Stack): Promise<Merchant> {
  const token = signDevToken(config, { user: 'usr_bench', workspace: 'ws_bench' });
  const system = signDevToken(config, { user: 'usr_bench_system', system: true });
  const http = apiClient(stack.api);
  const post = http.post;
  const account = (await post<AccountAnswer>('/accounts', { name: 'Bench', country: 'US', currency: 'USD' }, token)).data;
  const key = secretKeyOf(account);
  const provider = (await post<ProviderAnswer>('/payment-providers', { name: 'Sandbox', identifier: 'sandbox' }, system)).data;
  const ppc = (await post(`/payment-provider-configs?account_id=${account.id}`, { payment_provider_id: provider.id, name: 'Primary', credentials: { api_key: 'bench' } }, token)).data;
  for (const m of provider.methods) {
    await post(`/payment-provider-configs/${ppc.id}/fees`, { payment_provider_method_id: m.id, volume_fee: 2.9, fixed_fee: 30, fixed_fee_currency: 'USD' }, token);
  }
  const payOnce = async () => {
    const payment = (await post('/payments', { amount: 1000, currency: 'USD', confirm: true, payment_method: VISA }, key)).data;
    if (payment.status !== 'SUCCEEDED') throw new Error(`payment ended ${payment.status}`);
    return payment.id;
  };
  let floorSeq = 0;
  // The floor makes its start and update in one call, as our create with confirm does.
  const floorOnce = async () => {
    await stack.client.workflow.executeUpdateWithStart(floorConfirm, {
      startWorkflowOperation: new WithStartWorkflowOperation(floorPaymentWorkflow, {
        taskQueue: FLOOR_TASK_QUEUE, workflowId: `floor/${Date.now()}/${floorSeq++}`, workflowIdConflictPolicy: 'FAIL',
      }),
    });
  };
  return { http, token, account, key, provider, payOnce, floorOnce };
}
