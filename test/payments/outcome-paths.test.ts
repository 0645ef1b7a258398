import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyOutcome, type RecordOptions } from '../../activities/payments/outcomes';
import type { ProviderExchange, ProviderOutcome } from '../../activities/providers/types';
import { envTable } from '../../db/environments';
import { newId } from '../../lib/ids';
import type { AttemptArgs } from '../../contracts/payments';
import { createMerchant, Merchant, startStack, TestStack, unique } from '../support/stack';

/**
 * Recording an outcome has two paths (db/payment-outcomes.ts): one statement from the rows as the
 * attempt knows them, and the transaction it falls back to, the readable reference. For the same
 * outcome on the same rows both must write the same: charge, payment, cards, health and events.
 */

let stack: TestStack;
let merchant: Merchant;

beforeAll(async () => {
  stack = await startStack();
  merchant = await createMerchant(stack);
});
afterAll(async () => {
  await stack?.close();
});

const table = (name: string) => stack.db(envTable('production', name));

const EXCHANGE: ProviderExchange = {
  operation: 'authorize', idempotency_key: 'k', request: { method: 'POST', path: '/v1/charges' }, response: { status: 200 },
  outcome: 'approved', started_at: '2026-01-01T00:00:00.000Z', duration_ms: 42,
};

/** A PROCESSING payment with one CREATED charge at a config of its own, paid by a card with its CVC. */
async function seeded(over: Partial<AttemptArgs> = {}): Promise<{ args: AttemptArgs; configId: string }> {
  const paymentId = newId('pay');
  const chargeId = newId('ch');
  const pmId = newId('pm');
  const configId = unique('ppc_paths');
  await table('payments').insert({ id: paymentId, account_id: merchant.account.id, amount: 1000, currency: 'EUR', status: 'PROCESSING' });
  await table('payment_methods').insert({
    id: pmId, account_id: merchant.account.id, payment_id: paymentId, card_network: 'VISA', card_last4: '4242', pan_encrypted: 'sealed', cvc_encrypted: 'sealed-cvc',
  });
  await table('charges').insert({
    id: chargeId, payment_id: paymentId, payment_method_id: pmId, account_id: merchant.account.id, status: 'CREATED', amount: 1000,
    currency: 'EUR', attempt_no: 1, payment_provider_config_id: configId,
  });
  return {
    configId,
    args: {
      paymentId, accountId: merchant.account.id, workspaceId: merchant.workspaceId, environment: 'production', chargeId,
      routingPlanId: 'rp_paths', attemptNo: 1, candidate: { providerConfigId: configId, providerId: 'pp_x', methodId: 'ppm_x', estimatedFee: null },
      paymentMethodId: pmId, capture: false, lastCandidate: true, context: { actor: { type: 'system', id: 'test' } }, ...over,
    },
  };
}

// A health row's shard is its recording connection's (db/provider-health.ts): identity, not content.
const CLOCK_AND_IDENTITY = new Set(['created_at', 'updated_at', 'created', 'since', 'id', 'version', 'client_secret', 'shard']);

/** `value` with the seeded ids named by their role, and without what differs by clock or by row identity. */
function normalized(value: unknown, ids: Record<string, string>): unknown {
  let text = JSON.stringify(value);
  for (const [role, id] of Object.entries(ids)) text = text.split(id).join(role);
  return JSON.parse(text, (key, v: unknown) => (CLOCK_AND_IDENTITY.has(key) ? undefined : v));
}

/** Everything recording the outcome of `seed` wrote, comparable across twins. */
async function writtenBy({ args, configId }: { args: AttemptArgs; configId: string }): Promise<unknown> {
  const ids = { PAYMENT: args.paymentId, CHARGE: args.chargeId, CARD: args.paymentMethodId, CONFIG: configId };
  const events = await table('events').where({ payment_id: args.paymentId }).orderBy('id');
  return normalized({
    charge: await table('charges').where({ id: args.chargeId }).first(),
    payment: await table('payments').where({ id: args.paymentId }).first(),
    card: await table('payment_methods').where({ id: args.paymentMethodId }).first(),
    health: (await table('provider_health').where({ payment_provider_config_id: configId })).map(({ minute: _, last_error_at: __, ...row }) => row),
    events: events.map((e: { event: string; data: unknown; charge_id: string | null; routing_plan_id: string | null }) => ({
      event: e.event, charge_id: e.charge_id, routing_plan_id: e.routing_plan_id, data: e.data,
    })),
  }, ids);
}

/** Whether recording ran in a transaction: knex marks a transaction's statements. */
async function recordedInTransaction(run: () => Promise<unknown>): Promise<boolean> {
  const inTransaction: boolean[] = [];
  const onQuery = (q: { __knexTxId?: string }) => inTransaction.push(!!q.__knexTxId);
  stack.db.on('query', onQuery);
  try {
    await run();
  } finally {
    stack.db.off('query', onQuery);
  }
  return inTransaction.some(Boolean);
}

const approved: ProviderOutcome = { kind: 'approved', providerReference: 'ref_p', authorizedAmount: 1000, capturedAmount: 0, refundedAmount: 0 };
const OUTCOMES: [string, ProviderOutcome, Partial<AttemptArgs>, RecordOptions][] = [
  ['an approval', approved, {}, {}],
  ['an approval captured at once', approved, { capture: true }, { captured: { ...approved, capturedAmount: 1000 } }],
  ['a hard decline', { kind: 'hard_decline', declineCode: 'do_not_honor', message: 'Do not honor' }, {}, {}],
  ['a soft decline with candidates left', { kind: 'soft_decline', declineCode: 'processing_error' }, { lastCandidate: false }, {}],
  ['a soft decline at the last candidate', { kind: 'soft_decline', declineCode: 'processing_error' }, {}, {}],
  ['a step-up', { kind: 'soft_decline', declineCode: 'authentication_required' }, {}, {}],
  ['a transport error at the last candidate', { kind: 'transport_error', error: 'connection refused' }, {}, {}],
  ['a challenge', { kind: 'requires_action', providerReference: 'ref_c', redirectUrl: 'https://acs.example/c' }, { returnUrl: 'https://shop.example/r' }, {}],
];

describe('the two paths of recording an outcome', () => {
  it.each(OUTCOMES)('write the same rows for %s', async (_, outcome, over, options) => {
    const atOnce = await seeded(over);
    const inTransaction = await seeded(over);
    const record = async (seed: { args: AttemptArgs }, known: boolean) => {
      const written = known ? await table('charges').where({ id: seed.args.chargeId }).first() : undefined;
      const payment = known ? await table('payments').where({ id: seed.args.paymentId }).first() : undefined;
      return applyOutcome(stack.db, seed.args, outcome, [EXCHANGE], { ...options, cardNetwork: 'VISA', wipeCvc: true, ...(known ? { written, payment } : {}) });
    };
    const answers: unknown[] = [];
    expect(await recordedInTransaction(async () => { answers.push(await record(atOnce, true)); })).toBe(false);
    expect(await recordedInTransaction(async () => { answers.push(await record(inTransaction, false)); })).toBe(true);
    expect(answers[0]).toEqual(answers[1]);
    const [one, other] = [await writtenBy(atOnce), await writtenBy(inTransaction)];
    expect(one).toEqual(other);
    expect((one as { events: unknown[] }).events.length).toBeGreaterThan(0);
  });
});
