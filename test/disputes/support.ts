import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { findTemporalCli } from '../../scripts/temporal-cli';
import { disputeWorkflowId } from '../../contracts/disputes';
import { bearer, Merchant, sandboxMerchant, TestStack } from '../support/stack';
import { addFees, createConfig, createProvider } from '../support/routing';
import { card, confirm, createPayment } from '../support/payments';
import { eventually } from '../support/worker-process';

/** Stripe's dispute test cards, which every processor here honours (docs/disputes.md#test-cards). */
export const DISPUTE_CARDS = { fraudulent: '4000000000000259', inquiry: '4000000000001976', earlyFraudWarning: '4000000000005423' } as const;

/** A sandbox merchant with one sandbox-processor config whose disputes come quickly (knobs in its `simulate`). */
export async function disputeFixture(stack: TestStack, simulate: Record<string, unknown> = {}) {
  const merchant = await sandboxMerchant(stack);
  const provider = await createProvider(stack, { sandbox: true });
  const config = await createConfig(stack, merchant, provider.id, {
    name: 'Sandbox', credentials: { api_key: 'sim_dispute_key_0001', simulate: { dispute_after_ms: 300, dispute_decision_ms: 300, ...simulate } },
  });
  await addFees(stack, merchant, config, provider, 2.9);
  return { merchant, provider, config };
}

/** A captured payment with `number`: answers its id. */
export async function paidWith(stack: TestStack, m: Merchant, number: string, amount = 4200): Promise<string> {
  const created = await createPayment(stack, m, { amount });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const res = await confirm(stack, m, created.body.data.id, { payment_method: card(number) });
  expect(res.body.data?.status, JSON.stringify(res.body)).toBe('SUCCEEDED');
  return created.body.data.id;
}

/** The payment's dispute once it satisfies `test` (through the API). */
export function disputeOf(stack: TestStack, m: Merchant, paymentId: string, test: (d: any) => boolean = () => true, timeoutMs = 30_000): Promise<any> {
  return eventually(async () => {
    const res = await stack.http.get(`/v1/disputes?payment_id=${paymentId}`).set(bearer(m.secretKey));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [dispute] = res.body.data;
    return dispute && test(dispute) ? dispute : undefined;
  }, timeoutMs, 100);
}

export async function getDispute(stack: TestStack, m: Merchant, id: string): Promise<any> {
  const res = await stack.http.get(`/v1/disputes/${id}`).set(bearer(m.secretKey));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

/** The events written about a dispute, oldest first. */
export async function disputeEvents(stack: TestStack, disputeId: string): Promise<string[]> {
  const rows = await stack.db('sandbox.events').where({ subject_id: disputeId }).orderBy('created_at', 'asc').orderBy('id', 'asc').select('event');
  return rows.map((r) => r.event);
}

/**
 * With RECORD_HISTORIES naming it (test/payments/replay.test.ts replays test/histories/), writes the
 * dispute's workflow history (`dispute-<name>.json`) as `temporal workflow show --output json` exports it.
 */
export function recordDisputeHistory(stack: TestStack, name: string, disputeId: string): void {
  const asked = process.env.RECORD_HISTORIES ?? '';
  if (asked !== '1' && !asked.split(',').includes(`dispute-${name}`)) return;
  const json = execFileSync(findTemporalCli('temporal')!, [
    'workflow', 'show', '--workflow-id', disputeWorkflowId(disputeId), '--output', 'json',
    '--address', stack.config.temporal.address!, '--namespace', stack.config.temporal.namespace,
  ], { encoding: 'utf8' });
  writeFileSync(join(__dirname, '..', 'histories', `dispute-${name}.json`), JSON.stringify(JSON.parse(json), null, 1));
}
