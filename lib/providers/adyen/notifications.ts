// Adyen's standard notifications (docs/connectors.md#notifications-and-hmac): a batch of items, each
// signed on its own (`additionalData.hmacSignature`, checked by the official library with the config's
// HMAC key), each normalized to a ProcessorEvent. Pure: the API stores what this returns and signals the
// workflows; Adyen wants `[accepted]` back, or it sends the batch again.

import { hmacValidator, Types } from '@adyen/api-library';
import type { AdyenCredentials } from './credentials';
import { redactSecrets } from '../redact';
import { isObject } from '../wire';
import type { ExternalAuthentication, NotifiedOperation, ProcessorEvent, WebhookRequest, WebhookVerdict } from '../notification-types';
import type { Approved, HardDecline, SoftDecline } from '../outcomes';
import { adyenRefusal, adyenRefusalCodeOf } from './decline-codes';
import type { DisputeFunds, DisputeNotice, DisputeReason, DisputeStatus } from '../disputes';

/** What Adyen expects back for a batch it may stop sending. */
export const ADYEN_WEBHOOK_REPLY = { status: 200, body: '[accepted]', contentType: 'text/plain' } as const;

/** A modification's `reference` (our idempotency key): the charge id, `:capture`, `:void` or `:reversal`, and `:<n>` for a later one. */
const MODIFICATION_REFERENCE = /^(.+):(?:capture|void|reversal)(?::\d+)?$/;

/**
 * additionalData kept out of a stored event or exchange: the signature, card or account data beyond
 * cardSummary (the last 4), and the 3-D Secure authentication value (the CAVV: a one-time cryptogram).
 */
const DROPPED_DATA = /^(?:hmacSignature|expiryDate|cardBin|issuerBin|cardHolderName|untokenisedCardSummary|iban|bankAccountNumber|ownerName|cavv)$|\.(?:bin|expiryDate|iban|ownerName|authenticationValue)$/i;

/** One NotificationRequestItem as received (JSON: `success` is the string "true" or "false"). */
interface NotificationItem {
  additionalData?: Record<string, string | undefined>;
  amount: { value: number; currency: string };
  eventCode: string;
  eventDate?: string;
  merchantAccountCode?: string;
  merchantReference: string;
  originalReference?: string;
  paymentMethod?: string;
  pspReference: string;
  reason?: string;
  success: string;
}
type Notice = Omit<ProcessorEvent, 'eventId' | 'type' | 'payload'>;

const validator = new hmacValidator();

export function parseAdyenWebhook(request: WebhookRequest): WebhookVerdict {
  const key = (request.credentials as Partial<AdyenCredentials>).hmac_key;
  if (typeof key !== 'string' || key === '') return { verified: false, error: 'the provider config has no hmac_key' };
  let body: unknown;
  try {
    body = JSON.parse(request.rawBody);
  } catch (err) {
    return { verified: false, error: `the body is not JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  const wrappers = isObject(body) && Array.isArray(body.notificationItems) ? body.notificationItems : undefined;
  if (!wrappers?.length) return { verified: false, error: 'the body is not an Adyen notification (no notificationItems)' };
  // The batch's `live` ("true" or "false") says which platform sent it; it is outside the items' signatures,
  // so it tells a test webhook aimed at a live config apart, and proves nothing about a forger (who lacks the key).
  const live = isObject(body) && body.live === 'true';
  const events: ProcessorEvent[] = [];
  for (const wrapper of wrappers) {
    const item = isObject(wrapper) ? wrapper.NotificationRequestItem : undefined;
    if (isItem(item) && signedBy(item, key)) events.push({ ...eventOf(item), ...(live ? { live: true } : {}) });
  }
  const rejected = wrappers.length - events.length;
  if (!events.length) return { verified: false, error: `no notification item has a valid hmacSignature (${rejected} rejected)` };
  return { verified: true, events, rejected, reply: { ...ADYEN_WEBHOOK_REPLY } };
}

/** The library's check: HMAC-SHA256 (hex key) over pspReference:originalReference:…:eventCode:success. */
function signedBy(item: NotificationItem, key: string): boolean {
  try {
    // The library types the item with its enums; the JSON's strings are what it signs.
    return validator.validateHMAC(item as unknown as Types.notification.NotificationRequestItem, key);
  } catch {
    // No signature, or one that is not base64 of the right length.
    return false;
  }
}

/** One item as a ProcessorEvent. Adyen has no event id: what it sends again when it retries is this triple. */
function eventOf(item: NotificationItem): ProcessorEvent {
  return {
    eventId: `${item.eventCode}:${item.pspReference}:${item.success}`,
    type: item.eventCode,
    ...notice(item),
    payload: storedItem(item),
  };
}

/** What an item reports on (docs/connectors.md#notifications-and-hmac has the table). */
function notice(item: NotificationItem): Notice {
  const success = item.success === 'true';
  const amount = item.amount.value;
  const original = item.originalReference || item.pspReference;
  const failed = (operation: NotifiedOperation, declineCode: string, about: Notice): Notice => ({
    ...about, operation, outcome: hard(declineCode, item.reason), providerCode: item.reason || item.eventCode,
  });
  switch (item.eventCode) {
    case 'AUTHORISATION': {
      // After a challenge, the 3-D Secure result when the webhook's settings include it (for a later candidate).
      const authentication = authenticationOf(item.additionalData);
      const about: Notice = { chargeId: item.merchantReference, providerReference: item.pspReference, ...(authentication ? { authentication } : {}) };
      // Captured at once or not, an authorization reports nothing captured: Adyen's CAPTURE follows.
      if (success) return { ...about, operation: 'authorize', outcome: approved(item.pspReference, amount, 0, 0) };
      const providerCode = item.additionalData?.refusalReasonCode ?? adyenRefusalCodeOf(item.reason ?? '');
      const decline = adyenRefusal(providerCode ?? '');
      const outcome: HardDecline | SoftDecline = {
        kind: decline.decision === 'hard' ? 'hard_decline' : 'soft_decline', declineCode: decline.code, ...(item.reason ? { message: item.reason } : {}),
      };
      return { ...about, operation: 'authorize', outcome, providerCode: providerCode ?? item.reason ?? 'refused' };
    }
    // A notification carries its own amount only: the captured one stands for the authorization's too.
    case 'CAPTURE': {
      const about: Notice = { chargeId: chargeOf(item.merchantReference), providerReference: original };
      return success ? { ...about, operation: 'capture', outcome: approved(original, amount, amount, 0) } : failed('capture', 'capture_failed', about);
    }
    case 'CAPTURE_FAILED':
      return failed('capture', 'capture_failed', { chargeId: chargeOf(item.merchantReference), providerReference: original });
    case 'CANCELLATION': {
      const about: Notice = { chargeId: chargeOf(item.merchantReference), providerReference: original };
      return success ? { ...about, operation: 'void', outcome: approved(original, amount, 0, 0) } : failed('void', 'void_failed', about);
    }
    case 'REFUND': {
      const about: Notice = { refundId: item.merchantReference, providerReference: original };
      if (!success) return failed('refund', 'refund_failed', about);
      return { ...about, operation: 'refund', outcome: { ...approved(original, amount, amount, amount), refundReference: item.pspReference } };
    }
    case 'REFUND_FAILED':
    case 'REFUNDED_REVERSED':
      return failed('refund', 'refund_failed', { refundId: item.merchantReference, providerReference: original });
    // Reports, fraud notices, …: stored and acknowledged, named by what they are about when it is ours.
    default: {
      if (DISPUTE_EVENTS.has(item.eventCode) && success) {
        const dispute = disputeOf(item);
        return { ...(dispute.chargeId ? { chargeId: dispute.chargeId } : {}), ...(dispute.providerReference ? { providerReference: dispute.providerReference } : {}), dispute };
      }
      const reference = chargeOf(item.merchantReference);
      return {
        ...(reference.startsWith('ch_') ? { chargeId: reference } : reference.startsWith('re_') ? { refundId: reference } : {}),
        ...(original ? { providerReference: original } : {}),
      };
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Disputes (docs/disputes.md): an item's pspReference is the dispute's, its originalReference the payment's

const DISPUTE_EVENTS = new Set([
  'NOTIFICATION_OF_CHARGEBACK', 'REQUEST_FOR_INFORMATION', 'CHARGEBACK', 'CHARGEBACK_REVERSED', 'SECOND_CHARGEBACK', 'PREARBITRATION_WON',
  'PREARBITRATION_LOST', 'INFORMATION_SUPPLIED', 'ISSUER_RESPONSE_TIMEFRAME_EXPIRED', 'DISPUTE_DEFENSE_PERIOD_ENDED',
]);

/**
 * The card schemes' reason codes (Visa's `10.4`, Mastercard's `4837`, Amex's `F29`, Visa's retrieval `33`)
 * as our reasons; any other code is `general`. Mastercard's 4853 "Cardholder Dispute" covers many grounds: general.
 */
const DISPUTE_REASON_CODES: Readonly<Record<string, DisputeReason>> = {
  ...Object.fromEntries(['10.1', '10.2', '10.3', '10.4', '10.5', '4837', '4840', '4849', '4870', '4871', 'F24', 'F29', '33'].map((code) => [code, 'fraudulent'])),
  ...Object.fromEntries(['13.1', '4855', '4859', 'C08', 'C18'].map((code) => [code, 'product_not_received'])),
  ...Object.fromEntries(['13.3', '13.4', '13.5', 'C31', 'C32'].map((code) => [code, 'product_unacceptable'])),
  ...Object.fromEntries(['12.6.1', '12.6.2', '4834', 'P08'].map((code) => [code, 'duplicate'])),
  ...Object.fromEntries(['13.2', '4841', 'C28'].map((code) => [code, 'subscription_canceled'])),
  ...Object.fromEntries(['13.6', '13.7', '4860', 'C02'].map((code) => [code, 'credit_not_processed'])),
  4863: 'unrecognized',
};

/**
 * What a dispute item says (docs/disputes.md#adyen has the table). Money moves on CHARGEBACK (withdrawn),
 * CHARGEBACK_REVERSED (given back) and SECOND_CHARGEBACK (withdrawn again, after a reversal); Adyen's
 * items carry no fee. An item about a Request for Information (rfi… codes, no chargeback code) is an inquiry.
 */
function disputeOf(item: NotificationItem): DisputeNotice {
  const data = item.additionalData ?? {};
  const code = (data.chargebackReasonCode ?? data.rfiReasonCode ?? '').trim();
  const inquiry = item.eventCode === 'REQUEST_FOR_INFORMATION' || (!data.chargebackReasonCode && data.rfiReasonCode !== undefined);
  const money = (kind: DisputeFunds['kind']): DisputeFunds => ({ kind, amount: item.amount.value, fee: 0, currency: item.amount.currency.toUpperCase() });
  const open: DisputeStatus = inquiry ? 'WARNING_NEEDS_RESPONSE' : data.autoDefended === 'true' ? 'UNDER_REVIEW' : 'NEEDS_RESPONSE';
  const verdict = data.disputeStatus === 'Won' ? 'WON' : data.disputeStatus && data.disputeStatus !== 'Pending' ? 'LOST' : undefined;
  const about: Partial<DisputeNotice> = (() => {
    switch (item.eventCode) {
      case 'NOTIFICATION_OF_CHARGEBACK': case 'REQUEST_FOR_INFORMATION': return { status: open };
      case 'CHARGEBACK': return { status: open, funds: money('withdrawn') };
      case 'CHARGEBACK_REVERSED': return { status: 'WON', funds: money('reinstated') };
      case 'SECOND_CHARGEBACK': return { status: 'LOST', funds: money('withdrawn') };
      case 'PREARBITRATION_WON': return { status: 'WON' };
      case 'PREARBITRATION_LOST': return { status: 'LOST' };
      case 'INFORMATION_SUPPLIED': return { status: inquiry ? 'WARNING_UNDER_REVIEW' : 'UNDER_REVIEW' };
      // The issuer let the answer stand, or did not answer: an inquiry ends; a chargeback says how.
      case 'ISSUER_RESPONSE_TIMEFRAME_EXPIRED': return inquiry ? { status: 'WARNING_CLOSED' } : verdict ? { status: verdict } : {};
      // Not defended in time, or accepted: lost (an inquiry's end comes by ISSUER_RESPONSE_TIMEFRAME_EXPIRED).
      default: return inquiry ? {} : { status: verdict ?? 'LOST' };
    }
  })();
  const reference = chargeOf(item.merchantReference);
  const due = isoDate(data.defensePeriodEndsAt);
  return {
    processorDisputeId: item.pspReference,
    ...(item.originalReference ? { providerReference: item.originalReference } : {}),
    ...(reference.startsWith('ch_') ? { chargeId: reference } : {}),
    ...about,
    ...(code ? { reason: DISPUTE_REASON_CODES[code] ?? 'general', processorReason: code } : {}),
    amount: item.amount.value,
    currency: item.amount.currency.toUpperCase(),
    ...(due ? { evidenceDueBy: due } : {}),
    isInquiry: inquiry,
    occurredAt: isoDate(item.eventDate) ?? new Date().toISOString(),
  };
}

function isoDate(text: string | undefined): string | undefined {
  const at = text ? new Date(text) : undefined;
  return at && !Number.isNaN(at.getTime()) ? at.toISOString() : undefined;
}

/**
 * The 3-D Secure result an answer's or a notification's additionalData carries (cavv, eci, threeDSVersion,
 * dsTransID), when it has all of it: what another processor needs to authorize without a second challenge.
 */
export function authenticationOf(additionalData: Record<string, string | undefined> | undefined): ExternalAuthentication | undefined {
  const { cavv, eci, threeDSVersion, dsTransID } = additionalData ?? {};
  if (!cavv || !eci || !threeDSVersion || !dsTransID) return undefined;
  return { version: threeDSVersion, eci, cavv, dsTransactionId: dsTransID };
}

function approved(providerReference: string, authorizedAmount: number, capturedAmount: number, refundedAmount: number): Approved {
  return { kind: 'approved', providerReference, authorizedAmount, capturedAmount, refundedAmount };
}

function hard(declineCode: string, reason: string | undefined): HardDecline {
  return { kind: 'hard_decline', declineCode, ...(reason ? { message: reason } : {}) };
}

/**
 * The charge id a modification's reference names (`<charge>:capture`, `<charge>:void`, `<charge>:reversal`, a later one's
 * `<charge>:capture:<n>`: contracts/payments.ts operationKey; or the charge id itself).
 */
function chargeOf(merchantReference: string): string {
  return MODIFICATION_REFERENCE.exec(merchantReference)?.[1] ?? merchantReference;
}

/**
 * An answer or item without its additionalData's signature, card data (cardSummary, the last 4, stays) and
 * CAVV, nor a threeDS2Result's authenticationValue.
 */
export function withoutCardData(value: unknown): unknown {
  if (!isObject(value)) return value;
  const stored = { ...value };
  if (isObject(value.additionalData)) {
    const kept = Object.entries(value.additionalData).filter(([name]) => !DROPPED_DATA.test(name));
    if (kept.length) stored.additionalData = Object.fromEntries(kept);
    else delete stored.additionalData;
  }
  if (isObject(value.threeDS2Result)) {
    const { authenticationValue: _cavv, ...result } = value.threeDS2Result;
    stored.threeDS2Result = result;
  }
  return stored;
}

/** The item as stored: no signature, no card data but cardSummary, no expiry in an authorization's reason. */
function storedItem(item: NotificationItem): Record<string, unknown> {
  const stored = withoutCardData(item) as Record<string, unknown>;
  // A successful AUTHORISATION's reason is `authCode:last4:expiry`.
  if (item.eventCode === 'AUTHORISATION' && typeof item.reason === 'string') stored.reason = item.reason.replace(/^([^:]*:\d{4}):\d{1,2}\/\d{2,4}$/, '$1');
  return redactSecrets(stored) as Record<string, unknown>;
}

function isItem(value: unknown): value is NotificationItem {
  if (!isObject(value) || !isObject(value.amount)) return false;
  const strings = [value.eventCode, value.pspReference, value.merchantReference, value.success];
  return strings.every((field) => typeof field === 'string') && typeof value.amount.value === 'number' && typeof value.amount.currency === 'string';
}
