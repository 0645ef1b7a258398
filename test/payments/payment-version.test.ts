import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyOutcome } from '../../activities/payments/outcomes';
import type { ProviderExchange } from '../../activities/providers/types';
import { envTable } from '../../db/environments';
import { newPaymentRow, paymentAfter, paymentInsert, updatePayment, type PaymentRow } from '../../db/payments';
import { newId } from '../../lib/ids';
import type { AttemptArgs } from '../../contracts/payments';
import { createMerchant, Merchant, startStack, TestStack, unique } from '../support/stack';

let stack: TestStack;
let merchant: Merchant;
beforeAll(async () => {
  stack = await startStack();
  merchant = await createMerchant(stack);
});
afterAll(async () => { await stack?.close(); });

const table = (name: string) => stack.db(envTable('production', name));
const paymentRow = async (id: string): Promise<PaymentRow> => table('payments').where({ id }).first();

const exchange: ProviderExchange = {
  operation: 'authorize', idempotency_key: 'k', request: { method: 'POST', path: '/v1/charges' }, response: { status: 200 },
  outcome: 'approved', started_at: new Date().toISOString(), duration_ms: 30,
};

/** A PROCESSING payment with one CREATED charge, paid by a saved Mastercard. */
async function seeded(): Promise<AttemptArgs> {
  const paymentId = newId('pay');
  const chargeId = newId('ch');
  const pmId = newId('pm');
  const configId = unique('ppc_version');
  await table('payments').insert({ id: paymentId, account_id: merchant.account.id, amount: 1000, currency: 'EUR', status: 'PROCESSING' });
  await table('payment_methods').insert({
    id: pmId, account_id: merchant.account.id, payment_id: paymentId, card_network: 'MASTERCARD', card_last4: '4444', pan_encrypted: 'sealed',
  });
  await table('charges').insert({
    id: chargeId, payment_id: paymentId, payment_method_id: pmId, account_id: merchant.account.id, status: 'CREATED', amount: 1000,
    currency: 'EUR', attempt_no: 1, payment_provider_config_id: configId,
  });
  return {
    paymentId, accountId: merchant.account.id, workspaceId: merchant.workspaceId, environment: 'production', chargeId,
    routingPlanId: newId('rp'), attemptNo: 1, candidate: { providerConfigId: configId, providerId: 'pp_x', methodId: 'ppm_x', estimatedFee: null },
    paymentMethodId: pmId, capture: false, lastCandidate: true, context: { actor: { type: 'system', id: 'test' } },
  };
}

describe('a payment row\'s version', () => {
  it('starts at 0 and moves on with every update, whoever writes it and whatever it sets', async () => {
    const row = newPaymentRow({
      id: newId('pay'), account_id: merchant.account.id, customer_id: null, checkout_session_id: null, amount: 500, currency: 'USD',
      auto_capture: true, secure_mode: 'NONE', installments: 1, routing: {}, metadata: {},
    }, {}, new Date());
    await paymentInsert(stack.db, 'production', row);
    expect((await paymentRow(row.id)).version).toBe(0);
    // The store's update, as an outcome or a command writes it; its answer is the row with its version.
    const updated = await updatePayment(stack.db, 'production', row.id, { status: 'PROCESSING' });
    expect(updated.version).toBe(1);
    expect(paymentAfter(row, { status: 'PROCESSING' }, updated.updated_at).version).toBe(1);
    // Any other writer (a refund's settlement, an operator's SQL) moves it too, even one that sets it.
    await table('payments').where({ id: row.id }).update({ amount_refunded: 10, updated_at: stack.db.fn.now() });
    await table('payments').where({ id: row.id }).update({ metadata: { k: 'v' }, version: 0 });
    expect((await paymentRow(row.id)).version).toBe(3);
  });
});

describe('an outcome in one statement, held to the payment\'s version', () => {
  it('writes nothing in it when the payment changed in the same millisecond with the same status: the transaction records it from the row as it is', async () => {
    const args = await seeded();
    const written = await table('charges').where({ id: args.chargeId }).first();
    const payment = await paymentRow(args.paymentId);
    // Written meanwhile, in the same millisecond: the same status and updated_at, new metadata.
    await table('payments').where({ id: args.paymentId }).update({ metadata: { changed: 'meanwhile' }, updated_at: payment.updated_at });
    const meanwhile = await paymentRow(args.paymentId);
    expect(meanwhile.updated_at.getTime()).toBe(payment.updated_at.getTime());
    expect(meanwhile.status).toBe(payment.status);

    const approved = { kind: 'approved', providerReference: 'ref_v', authorizedAmount: 1000, capturedAmount: 0, refundedAmount: 0 } as const;
    await applyOutcome(stack.db, args, approved, [exchange], { cardNetwork: 'MASTERCARD', written, payment });

    expect(await table('charges').where({ id: args.chargeId }).first()).toMatchObject({ status: 'AUTHORIZED', performance: { duration: 30, provider_calls: 1 } });
    const after = await paymentRow(args.paymentId);
    expect(after).toMatchObject({ status: 'AUTHORIZED', amount_capturable: 1000, metadata: { changed: 'meanwhile' }, version: payment.version + 2 });
    // The event shows the payment as Postgres holds it, the change made meanwhile included (the one
    // statement would have shown the row as the attempt knew it, without it).
    const events = await table('events').where({ payment_id: args.paymentId }).orderBy('id');
    expect(events.map((e: { event: string }) => e.event)).toEqual(['payment_intent.amount_capturable_updated']);
    expect(events[0].data.object).toMatchObject({ status: 'AUTHORIZED', metadata: { changed: 'meanwhile' } });
  });

  it('records in one statement while the payment is at the version the attempt knows', async () => {
    const args = await seeded();
    const written = await table('charges').where({ id: args.chargeId }).first();
    const payment = await paymentRow(args.paymentId);
    const declined = { kind: 'hard_decline', declineCode: 'do_not_honor', message: 'Do not honor' } as const;
    const seen: boolean[] = [];
    const onQuery = (q: { __knexTxId?: string }) => seen.push(!!q.__knexTxId);
    stack.db.on('query', onQuery);
    try {
      await applyOutcome(stack.db, args, declined, [exchange], { cardNetwork: 'MASTERCARD', written, payment });
    } finally {
      stack.db.off('query', onQuery);
    }
    expect(seen).toEqual([false]);
    expect(await paymentRow(args.paymentId)).toMatchObject({ status: 'FAILED', version: payment.version + 1 });
  });
});
