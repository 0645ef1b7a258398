// Answering Stripe's disputes (https://docs.stripe.com/disputes/api): evidence with `submit=true` on the
// dispute's update, or its close (the merchant concedes). Stripe keeps the answer under our idempotency
// key, so a retried submission replays the first one instead of counting as a second.

import type Stripe from 'stripe';
import type { DisputeEvidence } from '../../../lib/providers/disputes';
import type { DisputeActionInput, DisputeActionOutput, ProviderExchange, ProviderOutcome, SubmitDisputeEvidenceInput } from '../types';
import type { Call, Reply } from './call';

type Send = <T>(credentials: Record<string, unknown>, call: Call<T>) => Promise<Reply<T>>;

/** The dispute methods of the Stripe adapter, over its `send` (the library's client, the exchange record). */
export function stripeDisputeActions(send: Send) {
  return {
    submitDisputeEvidence(input: SubmitDisputeEvidenceInput): Promise<DisputeActionOutput> {
      const evidence = stripeEvidence(input.evidence);
      return act(send, input, {
        operation: 'dispute_submit',
        idempotencyKey: input.idempotencyKey,
        method: 'POST',
        path: `/v1/disputes/${input.processorDisputeId}`,
        // The evidence is the merchant's text about its customer: the record names the fields given, not what they say.
        summary: { evidence: Object.keys(evidence), submit: true },
        shown: shownDispute,
        send: (stripe) => stripe.disputes.update(input.processorDisputeId, { evidence, submit: true }, { idempotencyKey: input.idempotencyKey }),
      }, (dispute) => dispute.evidence_details.submission_count > 0);
    },

    acceptDispute(input: DisputeActionInput): Promise<DisputeActionOutput> {
      return act(send, input, {
        operation: 'dispute_accept',
        idempotencyKey: input.idempotencyKey,
        method: 'POST',
        path: `/v1/disputes/${input.processorDisputeId}/close`,
        shown: shownDispute,
        send: (stripe) => stripe.disputes.close(input.processorDisputeId, {}, { idempotencyKey: input.idempotencyKey }),
      }, (dispute) => dispute.status === 'lost' || dispute.status === 'warning_closed');
    },
  };
}

/**
 * One call and what its answer means: done (the dispute asked about answered), refused or failed (see
 * disputeRefusal). `got` tells from the dispute whether the action is done, for an answer that got lost.
 */
async function act(send: Send, input: DisputeActionInput, call: Call<Stripe.Dispute>, got: (dispute: Stripe.Dispute) => boolean): Promise<DisputeActionOutput> {
  const reply = await send(input.credentials, call);
  if (reply.kind === 'ok') {
    if (reply.value.id !== input.processorDisputeId) {
      const error = `dispute ${reply.value.id} answered, ${input.processorDisputeId} asked`;
      return { result: 'failed', error, exchange: recorded(reply.exchange, 'unknown', error) };
    }
    return { result: 'done', exchange: recorded(reply.exchange, 'approved') };
  }
  const refusal = disputeRefusal(reply.exchange);
  if (refusal) return { result: 'refused', reason: refusal.reason, exchange: recorded(reply.exchange, 'hard_decline', undefined, refusal.code) };
  const failed: DisputeActionOutput = { result: 'failed', error: errorText(reply.outcome), exchange: recorded(reply.exchange, reply.outcome.kind) };
  return reply.outcome.kind === 'unknown' ? settledBy(send, input, call.operation, got, failed) : failed;
}

/**
 * An action whose answer is unknown (a 5xx, a timeout): Stripe keeps a 5xx under the idempotency key, so
 * asking again would only replay it. The dispute itself tells whether the action got there.
 */
async function settledBy(
  send: Send, input: DisputeActionInput, operation: Call<Stripe.Dispute>['operation'], got: (dispute: Stripe.Dispute) => boolean, failed: DisputeActionOutput,
): Promise<DisputeActionOutput> {
  const id = input.processorDisputeId;
  const reply = await send(input.credentials, {
    operation, idempotencyKey: input.idempotencyKey, method: 'GET', path: `/v1/disputes/${id}`, shown: shownDispute,
    send: (stripe) => stripe.disputes.retrieve(id),
  });
  if (reply.kind === 'ok' && reply.value.id === id && got(reply.value)) return { result: 'done', exchange: recorded(reply.exchange, 'approved') };
  return failed;
}

/**
 * Stripe's 400 or 404 `invalid_request_error` on a dispute is final: it is closed, already answered, past
 * its due date, or not there, and the same request would meet the same answer. A 401/403 (credentials),
 * 429, an idempotency conflict, a 5xx or no answer may pass: failed, to be asked again.
 */
export function disputeRefusal(exchange: Omit<ProviderExchange, 'outcome'>): { reason: string; code?: string } | undefined {
  const status = exchange.response?.status;
  if (status !== 400 && status !== 404) return undefined;
  const error = (exchange.response?.body as { error?: { type?: unknown; code?: unknown; message?: unknown } } | undefined)?.error;
  if (error?.type !== 'invalid_request_error') return undefined;
  const code = typeof error.code === 'string' ? error.code : undefined;
  const reason = typeof error.message === 'string' && error.message !== '' ? error.message : `HTTP ${status}${code ? ` ${code}` : ''}`;
  return { reason, ...(code ? { code } : {}) };
}

/** Our evidence as Stripe's `evidence[...]`: the same field names; empty fields left out. */
function stripeEvidence(evidence: DisputeEvidence): Stripe.DisputeUpdateParams.Evidence {
  return Object.fromEntries(Object.entries(evidence).filter(([, value]) => typeof value === 'string' && value !== ''));
}

/** A dispute as the exchange shows it: its evidence by the fields that hold something. */
function shownDispute(dispute: Stripe.Dispute): unknown {
  const given = Object.entries(dispute.evidence ?? {}).filter(([, value]) => value !== null && value !== '' && typeof value !== 'object').map(([field]) => field);
  return { ...dispute, evidence: given };
}

function recorded(exchange: Omit<ProviderExchange, 'outcome'>, outcome: ProviderExchange['outcome'], error?: string, providerCode?: string): ProviderExchange {
  return { ...exchange, outcome, ...(error ? { error } : {}), ...(providerCode ? { provider_code: providerCode } : {}) };
}

function errorText(outcome: ProviderOutcome): string {
  return 'error' in outcome ? outcome.error : 'declineCode' in outcome ? `${outcome.declineCode}${outcome.message ? `: ${outcome.message}` : ''}` : outcome.kind;
}
