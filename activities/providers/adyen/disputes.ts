// Answering Adyen's disputes through its Disputes API v30 (https://docs.adyen.com/risk-management/disputes-api):
// a defense is the defense reasons Adyen offers for the dispute, our evidence supplied as a document for
// the one that fits our reason, then defendDispute; a concession is acceptDispute. Each call goes under its
// own idempotency key (the action's, suffixed), so a retried submission replays instead of counting twice.

import { DisputesAPI } from '@adyen/api-library';
import type { DisputeReason } from '../../../lib/providers/disputes';
import type { DisputeActionInput, DisputeActionOutput, ProviderExchange, ProviderOutcome, SubmitDisputeEvidenceInput } from '../types';
import { defenseDocumentPdf } from './defense-document';
import { ADYEN_DISPUTES_PATH, type Call, type Reply } from './transport';

type Send = <T>(credentials: Record<string, unknown>, call: Call<T>) => Promise<Reply<T>>;

/** What every Disputes API answer carries: whether Adyen did it, and why not. */
interface ServiceAnswer { disputeServiceResult?: { success?: boolean; errorMessage?: string } }
interface DefenseDocumentType { defenseDocumentTypeCode: string; requirementLevel: string }
interface DefenseReason { defenseReasonCode: string; defenseDocumentTypes?: DefenseDocumentType[] }
interface ReasonsAnswer extends ServiceAnswer { defenseReasons?: DefenseReason[] }

/** Adyen's catch-all defense: any material, one document of type DefenseMaterial. */
const GENERAL_DEFENSE = 'SupplyDefenseMaterial';
const GENERAL_DOCUMENT = 'DefenseMaterial';

/** Words in Adyen's defense reason codes that fit our reasons, best first; a dispute that offers none is defended with GENERAL_DEFENSE. */
const DEFENSES_FOR: Record<DisputeReason, readonly string[]> = {
  fraudulent: ['CompellingEvidence', 'Authoriz', 'Authentic'],
  unrecognized: ['CompellingEvidence', 'Authoriz', 'Recogni'],
  product_not_received: ['GoodsOrServicesProvided', 'ServicesProvided', 'Delivery', 'Delivered'],
  product_unacceptable: ['GoodsWereAsDescribed', 'AsDescribed', 'GoodsRepairedOrReplaced', 'GoodsNotReturned'],
  duplicate: ['Duplicate', 'DifferentTransaction', 'SeparateTransaction'],
  subscription_canceled: ['Cancellation', 'Recurring'],
  credit_not_processed: ['CreditOrCancellation', 'Credit', 'Refund', 'Cancellation'],
  general: [],
};

type Step<T> = { ok: true; value: T; exchange: Omit<ProviderExchange, 'outcome'> } | { ok: false; output: DisputeActionOutput };

/** The dispute methods of the Adyen adapter, over its transport's `send`. */
export function adyenDisputeActions(send: Send) {
  /** One Disputes API call: its answer when Adyen did it, else what that means for the action. */
  async function call<T extends ServiceAnswer>(input: DisputeActionInput, operation: 'dispute_submit' | 'dispute_accept', name: string, suffix: string,
    summary: Record<string, unknown>, request: (api: DisputesAPI['DisputesApi'], merchantAccount: string, idempotencyKey: string) => Promise<T>): Promise<Step<T>> {
    const idempotencyKey = suffix ? `${input.idempotencyKey}:${suffix}` : input.idempotencyKey;
    const reply = await send(input.credentials, {
      operation, service: 'disputes', idempotencyKey, path: `${ADYEN_DISPUTES_PATH}/${name}`, summary: { disputePspReference: input.processorDisputeId, ...summary },
      send: (_checkout, merchantAccount, client) => request(new DisputesAPI(client).DisputesApi, merchantAccount, idempotencyKey),
    });
    if (reply.kind === 'error') return { ok: false, output: failure(reply) };
    const result = reply.value.disputeServiceResult;
    if (result?.success === true) return { ok: true, value: reply.value, exchange: reply.exchange };
    // Adyen answered and said no (already defended or accepted, past the defense period, not defendable): final.
    const reason = result?.errorMessage || `Adyen's ${name} did not succeed`;
    return { ok: false, output: { result: 'refused', reason, exchange: recorded(reply.exchange, 'hard_decline', reason) } };
  }

  return {
    async submitDisputeEvidence(input: SubmitDisputeEvidenceInput): Promise<DisputeActionOutput> {
      const asked = { disputePspReference: input.processorDisputeId };
      const reasons = await call<ReasonsAnswer>(input, 'dispute_submit', 'retrieveApplicableDefenseReasons', 'reasons', {},
        (api, merchantAccountCode, idempotencyKey) => api.retrieveApplicableDefenseReasons({ ...asked, merchantAccountCode }, { idempotencyKey }));
      if (!reasons.ok) return reasons.output;
      const defense = defenseFor(input.reason, reasons.value.defenseReasons ?? []);
      const content = defenseDocumentPdf(input.evidence).toString('base64');
      const documents = defense.documentTypes.map((defenseDocumentTypeCode) => ({ defenseDocumentTypeCode, contentType: 'application/pdf', content }));
      // The evidence is the merchant's text about its customer: the record names the fields and document types, not what they say.
      const supplied = await call(input, 'dispute_submit', 'supplyDefenseDocument', 'document', {
        evidence: Object.keys(input.evidence), defenseDocuments: defense.documentTypes.map((type) => ({ defenseDocumentTypeCode: type, contentType: 'application/pdf' })),
      }, (api, merchantAccountCode, idempotencyKey) => api.supplyDefenseDocument({ ...asked, merchantAccountCode, defenseDocuments: documents }, { idempotencyKey }));
      if (!supplied.ok) return supplied.output;
      const defended = await call(input, 'dispute_submit', 'defendDispute', '', { defenseReasonCode: defense.code },
        (api, merchantAccountCode, idempotencyKey) => api.defendDispute({ ...asked, merchantAccountCode, defenseReasonCode: defense.code }, { idempotencyKey }));
      return defended.ok ? { result: 'done', exchange: recorded(defended.exchange, 'approved') } : defended.output;
    },

    async acceptDispute(input: DisputeActionInput): Promise<DisputeActionOutput> {
      const accepted = await call(input, 'dispute_accept', 'acceptDispute', '', {},
        (api, merchantAccountCode, idempotencyKey) => api.acceptDispute({ disputePspReference: input.processorDisputeId, merchantAccountCode }, { idempotencyKey }));
      return accepted.ok ? { result: 'done', exchange: recorded(accepted.exchange, 'approved') } : accepted.output;
    },
  };
}

/**
 * The defense reason fitting our reason among those Adyen offers (else its catch-all, else the first
 * offered), and the document types our one document goes in as: every Required one and the first of a
 * OneOrMore group (DefenseMaterial when the reason names none).
 */
export function defenseFor(reason: DisputeReason, offered: readonly DefenseReason[]): { code: string; documentTypes: string[] } {
  const chosen = DEFENSES_FOR[reason].map((word) => offered.find((d) => d.defenseReasonCode.includes(word))).find(Boolean)
    ?? offered.find((d) => d.defenseReasonCode === GENERAL_DEFENSE) ?? offered[0];
  if (!chosen) return { code: GENERAL_DEFENSE, documentTypes: [GENERAL_DOCUMENT] };
  const types = chosen.defenseDocumentTypes ?? [];
  const required = types.filter((t) => t.requirementLevel === 'Required').map((t) => t.defenseDocumentTypeCode);
  const oneOf = types.find((t) => t.requirementLevel === 'OneOrMore')?.defenseDocumentTypeCode;
  const documentTypes = [...required, ...(oneOf ? [oneOf] : [])];
  return { code: chosen.defenseReasonCode, documentTypes: documentTypes.length ? documentTypes : [GENERAL_DOCUMENT] };
}

/**
 * A call without Adyen's verdict. A 400/404/422 names a request Adyen will not take however often it is
 * sent (an unknown dispute, a malformed one): refused. Credentials (401/403), throttling, a 5xx or no
 * answer may pass: failed, to be asked again.
 */
function failure(reply: Extract<Reply<unknown>, { kind: 'error' }>): DisputeActionOutput {
  const status = reply.exchange.response?.status;
  const body = reply.exchange.response?.body as { message?: unknown; errorCode?: unknown } | undefined;
  const message = typeof body?.message === 'string' && body.message !== '' ? body.message : `HTTP ${status ?? 'no answer'}`;
  if (status === 400 || status === 404 || status === 422) {
    const code = typeof body?.errorCode === 'string' ? body.errorCode : undefined;
    return { result: 'refused', reason: message, exchange: recorded(reply.exchange, 'hard_decline', undefined, code) };
  }
  return { result: 'failed', error: errorText(reply.outcome, message), exchange: recorded(reply.exchange, reply.outcome.kind) };
}

function recorded(exchange: Omit<ProviderExchange, 'outcome'>, outcome: ProviderExchange['outcome'], error?: string, providerCode?: string): ProviderExchange {
  return { ...exchange, outcome, ...(error ? { error } : {}), ...(providerCode ? { provider_code: providerCode } : {}) };
}

function errorText(outcome: ProviderOutcome, fallback: string): string {
  return 'error' in outcome ? outcome.error : fallback;
}
