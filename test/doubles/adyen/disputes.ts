// The Adyen double's disputes: Stripe's dispute test cards (which every processor double honours) dispute
// a payment a moment after it is captured, by Adyen's signed dispute notifications, and the four calls of
// the Disputes API v30 the adapter makes are served per the vendored contract (./contract/DisputeService-v30.json).
//
// 4000000000000259: NOTIFICATION_OF_CHARGEBACK then CHARGEBACK (Visa 10.4, fraud; the money withdrawn).
// 4000000000001976: REQUEST_FOR_INFORMATION (an inquiry, Visa retrieval 33).
// 4000000000005423: an early fraud warning only: REQUEST_FOR_INFORMATION, then ISSUER_RESPONSE_TIMEFRAME_EXPIRED
//   (the inquiry ends, nothing owed) — Adyen has no event for a warning alone.
// A defense (supplyDefenseDocument + defendDispute) sends INFORMATION_SUPPLIED, then after decision_ms:
// CHARGEBACK_REVERSED (won, the money back) when a supplied document contains `winning_evidence`, else
// PREARBITRATION_LOST (lost; the chargeback's debit stands); an inquiry's defense ends it
// (ISSUER_RESPONSE_TIMEFRAME_EXPIRED). acceptDispute: DISPUTE_DEFENSE_PERIOD_ENDED (disputeStatus Accepted), or
// for an inquiry ISSUER_RESPONSE_TIMEFRAME_EXPIRED. A chargeback left unanswered past its defense period:
// DISPUTE_DEFENSE_PERIOD_ENDED (Expired). Like Adyen, a second defense or acceptance, or one after the
// defense period, answers `disputeServiceResult.success: false` with an errorMessage.

import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import { randomBytes } from 'node:crypto';
import disputesContract from './contract/DisputeService-v30.json';

type Json = Record<string, any>;

export const DISPUTES_PATH = '/ca/services/DisputeService/v30';

/** The dispute test cards and what each starts. */
export const DISPUTE_TEST_CARDS: Readonly<Record<string, 'chargeback' | 'inquiry' | 'warning'>> = {
  '4000000000000259': 'chargeback', '4000000000001976': 'inquiry', '4000000000005423': 'warning',
};

/** The timing knobs (tests use milliseconds). */
export interface DisputeTiming {
  /** After the capture, before the first dispute notification (default 2000). */
  after_capture_ms?: number;
  /** How long the defense period is (defensePeriodEndsAt; default 7 days). */
  defense_period_ms?: number;
  /** After a defense (or an early fraud warning's inquiry), until the outcome's notification (default 1000). */
  decision_ms?: number;
}

/** A dispute as the double holds it: for tests to assert on what it received. */
export interface DoubleDispute {
  pspReference: string;
  paymentPspReference: string;
  kind: 'chargeback' | 'inquiry' | 'warning';
  status: 'Unresponded' | 'Responded' | 'Accepted' | 'Expired' | 'Won' | 'Lost' | 'Closed';
  defensePeriodEndsAt: string;
  /** What supplyDefenseDocument received, the content decoded (latin1). */
  documents: { defenseDocumentTypeCode: string; contentType: string; text: string }[];
  defenseReasonCode?: string;
  /** Every Disputes API call about it, in order, with its success. */
  calls: { operation: string; success: boolean; errorMessage?: string }[];
}

type Notify = (payment: Json, eventCode: string, success: boolean, fields: Json) => void;

const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
ajv.addFormat('byte', /^[A-Za-z0-9+/]*={0,2}$/).addSchema(disputesContract, 'disputes');
const schema = (name: string) => ajv.getSchema(`disputes#/components/schemas/${name}`) as ValidateFunction;

const REQUESTS: Record<string, string> = {
  retrieveApplicableDefenseReasons: 'DefenseReasonsRequest', supplyDefenseDocument: 'SupplyDefenseDocumentRequest',
  defendDispute: 'DefendDisputeRequest', acceptDispute: 'AcceptDisputeRequest',
};

/** The defense reasons the double offers: a chargeback's fraud-specific one and the catch-all; an inquiry the catch-all. */
function defenseReasons(kind: DoubleDispute['kind']): Json[] {
  const material = { defenseReasonCode: 'SupplyDefenseMaterial', defenseDocumentTypes: [
    { defenseDocumentTypeCode: 'TIDorInvoice', requirementLevel: 'Optional' }, { defenseDocumentTypeCode: 'DefenseMaterial', requirementLevel: 'Required' },
  ] };
  const compelling = { defenseReasonCode: 'CompellingEvidence', defenseDocumentTypes: [
    { defenseDocumentTypeCode: 'TIDorInvoice', requirementLevel: 'Optional' }, { defenseDocumentTypeCode: 'CompellingEvidence', requirementLevel: 'Required' },
  ] };
  return kind === 'chargeback' ? [compelling, material] : [material];
}

const pspReference = () => randomBytes(12).toString('base64').replace(/[^A-Za-z0-9]/g, '').toUpperCase().padEnd(16, 'D').slice(0, 16);

export function createDisputeDesk(notify: Notify, payments: () => Map<string, Json>) {
  const disputes = new Map<string, DoubleDispute>();
  const timers = new Set<NodeJS.Timeout>();
  let timing: Required<DisputeTiming> = { after_capture_ms: 2000, defense_period_ms: 7 * 24 * 3_600_000, decision_ms: 1000 };

  function later(ms: number, run: () => void) {
    const timer = setTimeout(() => {
      timers.delete(timer);
      run();
    }, ms);
    timers.add(timer);
  }

  /** A dispute notification about `dispute`, its codes as the kind has them. */
  function tell(dispute: DoubleDispute, eventCode: string, extra: Json = {}, reason = '') {
    const payment = payments().get(dispute.paymentPspReference) as Json;
    const codes = dispute.kind === 'chargeback'
      ? { chargebackReasonCode: '10.4', chargebackSchemeCode: 'visa' }
      : { rfiReasonCode: '33', rfiSchemeCode: 'visa' };
    notify(payment, eventCode, true, {
      pspReference: dispute.pspReference, originalReference: payment.pspReference, merchantReference: payment.merchantReference, amount: payment.amount,
      reason: reason || (dispute.kind === 'chargeback' ? 'Other Fraud-Card Absent Environment' : 'Request for information'),
      additionalData: { ...codes, ...extra },
    });
  }

  const open = (dispute: DoubleDispute) => dispute.status === 'Unresponded';
  const isoSeconds = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+00:00');

  /** A captured payment with a dispute test card: its dispute, a moment later. */
  function captured(payment: Json) {
    const kind = payment.disputeCard as DoubleDispute['kind'] | undefined;
    if (!kind || payment.disputed) return;
    payment.disputed = true;
    later(timing.after_capture_ms, () => {
      const dispute: DoubleDispute = {
        pspReference: pspReference(), paymentPspReference: payment.pspReference, kind, status: 'Unresponded',
        defensePeriodEndsAt: isoSeconds(Date.now() + timing.defense_period_ms), documents: [], calls: [],
      };
      disputes.set(dispute.pspReference, dispute);
      const period = { defensePeriodEndsAt: dispute.defensePeriodEndsAt, defendable: 'true', disputeStatus: 'Unresponded' };
      if (kind === 'chargeback') {
        tell(dispute, 'NOTIFICATION_OF_CHARGEBACK', period);
        tell(dispute, 'CHARGEBACK', period);
      } else tell(dispute, 'REQUEST_FOR_INFORMATION', { defensePeriodEndsAt: dispute.defensePeriodEndsAt });
      if (kind === 'warning') later(timing.decision_ms, () => close(dispute));
      later(timing.defense_period_ms, () => {
        if (!open(dispute) || dispute.kind !== 'chargeback') return;
        dispute.status = 'Expired';
        tell(dispute, 'DISPUTE_DEFENSE_PERIOD_ENDED', { disputeStatus: 'Expired' });
      });
    });
  }

  /** An inquiry ends: the issuer asks no more. */
  function close(dispute: DoubleDispute) {
    if (dispute.status === 'Closed') return;
    dispute.status = 'Closed';
    tell(dispute, 'ISSUER_RESPONSE_TIMEFRAME_EXPIRED');
  }

  /** Why Adyen would not take an answer to this dispute now (undefined: it would). */
  function refusal(dispute: DoubleDispute): string | undefined {
    if (dispute.status === 'Responded' || dispute.status === 'Won' || dispute.status === 'Lost') return 'Dispute is already defended';
    if (dispute.status === 'Accepted') return 'Dispute is already accepted';
    if (dispute.status !== 'Unresponded' || Date.parse(dispute.defensePeriodEndsAt) <= Date.now()) return 'Defense period has ended';
    return undefined;
  }

  function defend(dispute: DoubleDispute, body: Json): string | undefined {
    const reason = defenseReasons(dispute.kind).find((r) => r.defenseReasonCode === body.defenseReasonCode);
    if (!reason) return `Invalid defense reason code: ${String(body.defenseReasonCode)}`;
    const missing = reason.defenseDocumentTypes.filter((t: Json) => t.requirementLevel === 'Required' && !dispute.documents.some((d) => d.defenseDocumentTypeCode === t.defenseDocumentTypeCode));
    if (missing.length) return `Required defense documents missing: ${missing.map((t: Json) => t.defenseDocumentTypeCode).join(', ')}`;
    dispute.status = 'Responded';
    dispute.defenseReasonCode = reason.defenseReasonCode;
    tell(dispute, 'INFORMATION_SUPPLIED', { disputeStatus: 'Pending' });
    later(timing.decision_ms, () => {
      if (dispute.kind !== 'chargeback') return close(dispute);
      const won = dispute.documents.some((d) => d.text.includes('winning_evidence'));
      dispute.status = won ? 'Won' : 'Lost';
      tell(dispute, won ? 'CHARGEBACK_REVERSED' : 'PREARBITRATION_LOST', { disputeStatus: dispute.status });
    });
    return undefined;
  }

  /** One Disputes API call (path below DISPUTES_PATH): Adyen's answer, or its 422 for a body the contract refuses. */
  function route(operation: string, body: Json): { status: number; body: unknown } {
    const request = REQUESTS[operation];
    if (!request) return { status: 404, body: { status: 404, errorCode: '000', message: `Unknown endpoint ${operation}`, errorType: 'validation' } };
    const validate = schema(request);
    if (!validate(body)) return { status: 422, body: { status: 422, errorCode: '702', message: ajv.errorsText(validate.errors), errorType: 'validation' } };
    const dispute = disputes.get(body.disputePspReference);
    const answer = (errorMessage?: string, extra: Json = {}) => {
      dispute?.calls.push({ operation, success: !errorMessage, ...(errorMessage ? { errorMessage } : {}) });
      return { status: 200, body: { ...extra, disputeServiceResult: errorMessage ? { success: false, errorMessage } : { success: true } } };
    };
    if (!dispute) return answer(`Could not find dispute ${String(body.disputePspReference)}`);
    if (operation === 'retrieveApplicableDefenseReasons') return answer(undefined, { defenseReasons: defenseReasons(dispute.kind).map((r) => ({ ...r, satisfied: false })) });
    const refused = refusal(dispute);
    if (refused) return answer(refused);
    if (operation === 'supplyDefenseDocument') {
      for (const document of body.defenseDocuments as Json[]) {
        dispute.documents.push({ defenseDocumentTypeCode: document.defenseDocumentTypeCode, contentType: document.contentType, text: Buffer.from(document.content, 'base64').toString('latin1') });
      }
      return answer();
    }
    if (operation === 'defendDispute') return answer(defend(dispute, body));
    dispute.status = 'Accepted';
    later(20, () => (dispute.kind === 'chargeback' ? tell(dispute, 'DISPUTE_DEFENSE_PERIOD_ENDED', { disputeStatus: 'Accepted' }) : close(dispute)));
    return answer();
  }

  return {
    captured,
    route,
    setTiming(next: DisputeTiming) {
      timing = { ...timing, ...next };
    },
    disputes: (): DoubleDispute[] => [...disputes.values()].map((d) => ({ ...d, documents: [...d.documents], calls: [...d.calls] })),
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
