// The processor's side of the disputes scenario (bench/disputes.ts): the sandbox processor's dispute
// notifications for charges the bench captured, built as simulator/disputes.ts builds a chargeback's
// (`dispute.created`, then `dispute.funds_withdrawn`) and signed and retried as simulator/notifications.ts
// does, sent to the API's provider-webhook route of the charge's config.

import { Agent, request } from 'undici';
import { ulid } from 'ulid';
import type { Db } from '../db/knex';
import { envTable } from '../db/environments';
import { disputeIdOf } from '../lib/ids';
import { DISPUTE_FEE, type DisputeEvent, type DisputeEventType, type SimDispute } from '../simulator/disputes';
import { retryDelayMs, SIGNATURE_HEADER, signatureHeader } from '../simulator/notifications';

/** The api key of the bench merchant's sandbox config (bench/merchant.ts): the simulator signs its notifications with it. */
export const BENCH_SANDBOX_API_KEY = 'bench';

/** How long the simulator gives a merchant to answer a dispute by default (simulator/disputes.ts). */
const EVIDENCE_DUE_IN_MS = 7 * 24 * 3_600_000;

/** A captured charge of ours, as the processor knows it. */
export interface CapturedCharge { id: string; providerReference: string; configId: string; amount: number; currency: string }

/** One dispute's notifications: our dispute id (disputeIdOf) and each notification's exact body. */
export interface DisputeNotices { disputeId: string; configId: string; bodies: string[] }

/** The captured charges of `paymentIds` (one each: the bench's payments succeed on their first charge). */
export async function capturedCharges(db: Db, paymentIds: string[]): Promise<CapturedCharge[]> {
  const rows = await db(envTable('production', 'charges'))
    .whereIn('payment_id', paymentIds).where('captured_amount', '>', 0).whereNotNull('provider_reference')
    .select('id', 'provider_reference', 'payment_provider_config_id', 'captured_amount', 'currency');
  if (rows.length !== paymentIds.length) throw new Error(`disputes: ${rows.length} captured charges for ${paymentIds.length} payments`);
  return rows.map((row) => ({
    id: row.id, providerReference: row.provider_reference, configId: row.payment_provider_config_id, amount: Number(row.captured_amount), currency: row.currency,
  }));
}

/**
 * A fraudulent chargeback of `charge` as the simulator reports one: `dispute.created` (needs_response),
 * then `dispute.funds_withdrawn` with the amount and the dispute fee; the dispute without its evidence.
 */
export function chargebackNotices(charge: CapturedCharge, now = new Date()): DisputeNotices {
  const at = now.toISOString();
  const dispute: Omit<SimDispute, 'evidence'> = {
    id: `sdp_${ulid()}`, object: 'dispute', charge_id: charge.providerReference, charge_idempotency_key: charge.id, amount: charge.amount,
    currency: charge.currency, reason: 'fraudulent', status: 'needs_response', is_inquiry: false,
    evidence_due_by: new Date(now.getTime() + EVIDENCE_DUE_IN_MS).toISOString(), evidence_submitted_at: null, balance_transactions: [],
    created_at: at, updated_at: at,
  };
  const event = (type: DisputeEventType, data: DisputeEvent['data']): string => JSON.stringify({
    id: `evt_sim_${ulid()}`, type, created: Math.floor(now.getTime() / 1000), data,
  } satisfies DisputeEvent);
  const created = event('dispute.created', { dispute: { ...dispute, balance_transactions: [] } });
  const withdrawal = { type: 'withdrawal' as const, amount: charge.amount, fee: DISPUTE_FEE, currency: charge.currency, created_at: at };
  const withdrawn = event('dispute.funds_withdrawn', { dispute: { ...dispute, balance_transactions: [withdrawal] }, balance_transaction: withdrawal });
  return { disputeId: disputeIdOf(charge.configId, dispute.id), configId: charge.configId, bodies: [created, withdrawn] };
}

/**
 * Posts notifications to the API as the simulator does: each try signed afresh, a refusal tried again
 * after the simulator's backoff. A 429 (the route's per-sender limit, PROVIDER_WEBHOOK_RPS) is what a
 * processor meets too, so it is retried and counted, not failed; any other refusal fails the run.
 */
export function notifier(api: string) {
  const pool = new Agent({ connections: 64 });
  let rateLimited = 0;
  async function send(configId: string, body: string): Promise<void> {
    for (let retry = 0; ; retry++) {
      if (retry > 0) await new Promise((r) => setTimeout(r, retryDelayMs(retry)));
      const res = await request(`${api}/v1/provider-webhooks/${configId}`, {
        method: 'POST', dispatcher: pool, body,
        headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signatureHeader(body, BENCH_SANDBOX_API_KEY, Math.floor(Date.now() / 1000)) },
      });
      const answer = await res.body.text();
      if (res.statusCode < 300) return;
      if (res.statusCode !== 429) throw new Error(`disputes: the provider webhook answered ${res.statusCode} ${answer.slice(0, 300)}`);
      rateLimited += 1;
    }
  }
  return { send, rateLimited: () => rateLimited, close: () => pool.close() };
}

/**
 * When each dispute was applied (ms since the epoch) once all of `disputeIds` are: the row there,
 * NEEDS_RESPONSE, both notices applied. The moment is the row's `updated_at`, set by the transaction
 * that applied the last notice (Postgres's clock is this machine's). Polled every 50 ms, up to `timeoutMs`.
 */
export async function appliedAt(db: Db, disputeIds: string[], timeoutMs = 120_000): Promise<Map<string, number>> {
  const applied = () => db(envTable('production', 'disputes')).whereIn('id', disputeIds)
    .where('status', 'NEEDS_RESPONSE').whereRaw('jsonb_array_length(applied_event_ids) = 2');
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [{ count }] = await applied().count({ count: '*' });
    if (Number(count) === disputeIds.length) break;
    if (Date.now() > until) throw new Error(`disputes: ${count}/${disputeIds.length} applied after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const rows: { id: string; updated_at: Date }[] = await applied().select('id', 'updated_at');
  return new Map(rows.map((row) => [row.id, new Date(row.updated_at).getTime()]));
}
