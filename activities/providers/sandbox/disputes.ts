// The sandbox adapter's answers to a dispute (docs/sandbox-processor.md#disputes-in-the-sandbox): evidence
// with `submit: true`, or acceptance, each under the engine's idempotency key, read as done / refused /
// failed. The exchange records the evidence's field names, never its text (the merchant's customer data
// stays on the dispute), and the answer's dispute likewise.

import { outcomeOf } from '../../../lib/providers/sandbox/outcomes';
import { isObject } from '../../../lib/providers/wire';
import type {
  DisputeActionInput, DisputeActionOutput, ProviderCredentials, ProviderExchange, SubmitDisputeEvidenceInput, TransportError, UnknownOutcome,
} from '../types';

/** The one call each action makes (the adapter's `send` takes it). */
export interface DisputeCall {
  operation: 'dispute_submit' | 'dispute_accept';
  idempotencyKey: string;
  method: 'POST';
  path: string;
  credentials: ProviderCredentials;
  body: Record<string, unknown>;
  summary: Record<string, unknown>;
}

export type DisputeReply =
  | { answered: true; status: number; body: unknown; exchange: Omit<ProviderExchange, 'outcome'> }
  | { answered: false; failure: TransportError | UnknownOutcome; exchange: Omit<ProviderExchange, 'outcome'> };

// What the simulator answers when it will not take the answer, ever: already answered, closed, too late,
// no such dispute (for this api key), a request it cannot read, the key already used for another answer.
const REFUSALS = new Set(['dispute_already_submitted', 'dispute_closed', 'dispute_deadline_passed', 'dispute_not_found', 'invalid_request', 'idempotency_key_reused']);

export function sandboxDisputeActions(send: (call: DisputeCall) => Promise<DisputeReply>) {
  return {
    async submitDisputeEvidence(input: SubmitDisputeEvidenceInput): Promise<DisputeActionOutput> {
      const reply = await send({
        operation: 'dispute_submit', idempotencyKey: input.idempotencyKey, method: 'POST', credentials: input.credentials,
        path: `/v1/disputes/${encodeURIComponent(input.processorDisputeId)}/evidence`,
        body: { evidence: input.evidence, submit: true },
        summary: { evidence: Object.keys(input.evidence).sort(), submit: true },
      });
      return actionOutput(reply);
    },

    async acceptDispute(input: DisputeActionInput): Promise<DisputeActionOutput> {
      const reply = await send({
        operation: 'dispute_accept', idempotencyKey: input.idempotencyKey, method: 'POST', credentials: input.credentials,
        path: `/v1/disputes/${encodeURIComponent(input.processorDisputeId)}/accept`, body: {}, summary: {},
      });
      return actionOutput(reply);
    },
  };
}

/**
 * 2xx: done. A refusal code: refused for good. Anything else (no answer, an outage, a 5xx, a rejected api
 * key): failed, to be asked again under the same key, which the simulator answers once.
 */
function actionOutput(reply: DisputeReply): DisputeActionOutput {
  if (!reply.answered) return { result: 'failed', error: reply.failure.error, exchange: { ...reply.exchange, outcome: reply.failure.kind } };
  const exchange = withoutEvidenceText(reply.exchange);
  if (reply.status >= 200 && reply.status < 300) return { result: 'done', exchange: { ...exchange, outcome: 'approved' } };
  const code = codeOf(reply.body);
  if (reply.status < 500 && code && REFUSALS.has(code)) {
    return { result: 'refused', reason: code, exchange: { ...exchange, outcome: 'hard_decline', decline_code: code } };
  }
  const error = `HTTP ${reply.status}${code ? ` ${code}` : ''}`;
  // As for a charge: the outage answer did nothing (transport_error), any other 5xx may have (unknown).
  return { result: 'failed', error, exchange: { ...exchange, outcome: outcomeOf(reply.status, reply.body).kind, error } };
}

function codeOf(body: unknown): string | undefined {
  const error = isObject(body) ? body.error : undefined;
  return isObject(error) && typeof error.code === 'string' ? error.code : undefined;
}

/** The answer's dispute (at its top, or beside a refusal) with its evidence as field names. */
function withoutEvidenceText(exchange: Omit<ProviderExchange, 'outcome'>): Omit<ProviderExchange, 'outcome'> {
  const body = exchange.response?.body;
  if (!exchange.response || !isObject(body)) return exchange;
  const names = (dispute: Record<string, unknown>) => ({ ...dispute, evidence: isObject(dispute.evidence) ? Object.keys(dispute.evidence).sort() : [] });
  const shown = isObject(body.dispute) ? { ...body, dispute: names(body.dispute) } : body.object === 'dispute' ? names(body) : body;
  return { ...exchange, response: { ...exchange.response, body: shown } };
}
