// A local double of Adyen's Checkout API v71 (the parts the `adyen` adapter uses) and of its standard
// notifications, on 127.0.0.1 and a random port. Every request body is checked against the vendored
// OpenAPI contract (./contract, MIT): an invalid one is refused 422 in Adyen's error shape. X-API-Key is
// required (401 without one, or with one that starts with `invalid`). Idempotency-Key: the first answer
// under a key is stored and replayed for the same key, whatever the body (Adyen's documented behaviour:
// "the response to the first attempt will be returned"); validation errors (422) and 401s are not stored.
//
// Outcomes are chosen by the card holder name, as on Adyen's test platform (TEST_HOLDER_NAMES): any
// other name authorises. A payment captures at once unless it asks for manual capture
// (additionalData.manualCapture "true") or a later capture (captureDelayHours > 0). Captures, cancels and
// refunds answer `received`; their outcome comes by notification (CAPTURE, CANCELLATION, REFUND). A reversal
// (/payments/{pspReference}/reversals) refunds what was captured, else cancels the authorisation, and says
// which in its CANCEL_OR_REFUND notification (additionalData `modification.action`).
//
// 3-D Secure (https://docs.adyen.com/online-payments/3d-secure/redirect-3ds2): the holder name
// REDIRECT_SHOPPER and the test cards of ../three-d-secure answer RedirectShopper with a GET redirect to
// the double's challenge page (`/__double/3ds/<pspReference>`), whose POST authorises or refuses the
// payment (AUTHORISATION notification) and sends the browser to the returnUrl with a redirectResult (a test
// that does not follow that redirect plays the shopper who authenticated and never came back);
// /payments/details with that redirectResult answers how it ended. mpiData a double issued skips the
// challenge; authenticationData.attemptAuthentication `always` asks for one.
//
// Notifications: setWebhook({ url, hmacKey }); each is POSTed as a signed standard notification a few ms
// after the operation, again (NOTIFICATION_RETRY_MS) while the receiver does not answer `[accepted]`.
// Stored credentials: shopperInteraction ContAuth is a merchant-initiated renewal (no challenge possible;
// paymentMethod.networkPaymentReference names the first approval), recorded per payment in state();
// an approval answers additionalData.networkTxReference.
// Disputes (./disputes.ts): the dispute test cards dispute a payment after its capture; the Disputes API v30
// is served under /ca/services/DisputeService/v30 (the adapter's api_base host serves both APIs).
// Knobs: behave(), holdNotifications(), releaseNotifications(), failCapture() (a CAPTURE_FAILED), disputeTiming(); state: state(),
// disputes(), pendingNotifications(), notificationsSent(), notificationsIdle(). The HTTP knobs of the stripe double exist too:
// POST /__double/behaviour, POST /__double/dispute-timing, GET /__double/state.

import { hmacValidator } from '@adyen/api-library';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { randomBytes } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ADYEN_REFUSAL_REASONS } from '../../../lib/providers/adyen/decline-codes';
import { createDisputeDesk, DISPUTE_TEST_CARDS, DISPUTES_PATH, type DisputeTiming, type DoubleDispute } from './disputes';
import { Challenge, challengeUrl, issueAuthentication, issuedByADouble, issuerStep, networkTransactionId, serveChallenge, THREE_DS_TEST_CARDS, withParams } from '../three-d-secure';
import checkoutContract from './contract/CheckoutService-v71.json';
import webhooksContract from './contract/Webhooks-v1.json';

type Json = Record<string, any>;

/** What a holder name makes Adyen's test platform answer. */
export interface TestOutcome {
  resultCode: 'Authorised' | 'Refused' | 'Error' | 'Cancelled' | 'Received' | 'Pending' | 'RedirectShopper' | 'IdentifyShopper' | 'ChallengeShopper';
  refusalReasonCode?: string;
  refusalReason?: string;
}

const holderName = (text: string) => text.toUpperCase().replace(/[^A-Z0-9]+/g, '_').replace(/^_|_$/g, '');
const refused = (code: string): TestOutcome => ({ resultCode: 'Refused', refusalReasonCode: code, refusalReason: ADYEN_REFUSAL_REASONS[code] });
const CHALLENGES: readonly TestOutcome['resultCode'][] = ['RedirectShopper', 'IdentifyShopper', 'ChallengeShopper'];

/**
 * A payment's outcome: the holder name first, as on Adyen's test platform, then the 3-D Secure test
 * cards (Stripe's numbers: 4000002760003184 and 4000000000003220 redirect; 4000008400001629 redirects,
 * then is refused (2); 4000000000003055 redirects only when attemptAuthentication is `always`;
 * 4000002500003155 is refused 38 Authentication required unless it is, then redirects). An
 * authentication a double issued (mpiData) skips any challenge.
 */
function testOutcome(name: string, number: string, requested: boolean, authenticated: boolean, merchantInitiated?: { networkTransactionId?: string }): TestOutcome {
  const named = TEST_HOLDER_NAMES[name];
  if (named && !(authenticated && CHALLENGES.includes(named.resultCode))) return named;
  switch (issuerStep(number, { requested, authenticated, ...(merchantInitiated ? { merchantInitiated } : {}) })) {
    case 'challenge': return { resultCode: 'RedirectShopper' };
    case 'authentication_required': return refused('38');
    case 'decline': return refused('2');
    default: return { resultCode: 'Authorised' };
  }
}

/**
 * Holder names → outcomes. Every published refusal reason, by its text upper-cased with `_` for spaces
 * and dashes (REFUSED → 2, BLOCKED_CARD → 5, EXPIRED_CARD → 6, NOT_ENOUGH_BALANCE → 12, ISSUER_UNAVAILABLE
 * → 9, ACQUIRER_ERROR → 4, CVC_DECLINED → 24, FRAUD → 20, AUTHENTICATION_REQUIRED → 38, …, each a Refused
 * payment); ERROR (resultCode Error, Acquirer Error), CANCELLED, RECEIVED and PENDING (the
 * AUTHORISATION notification then authorises it), REDIRECT_SHOPPER (a redirect to the double's challenge
 * page, authorised once approved there), IDENTIFY_SHOPPER and CHALLENGE_SHOPPER (native 3-D Secure 2 asked
 * for; nothing follows).
 */
export const TEST_HOLDER_NAMES: Readonly<Record<string, TestOutcome>> = {
  ...Object.fromEntries(Object.entries(ADYEN_REFUSAL_REASONS).map(([code, text]) => [
    holderName(text), { resultCode: 'Refused', refusalReasonCode: code, refusalReason: text } satisfies TestOutcome,
  ])),
  ERROR: { resultCode: 'Error', refusalReasonCode: '4', refusalReason: 'Acquirer Error' },
  CANCELLED: { resultCode: 'Cancelled', refusalReasonCode: '15', refusalReason: 'Cancelled' },
  RECEIVED: { resultCode: 'Received' },
  PENDING: { resultCode: 'Pending' },
  REDIRECT_SHOPPER: { resultCode: 'RedirectShopper' },
  IDENTIFY_SHOPPER: { resultCode: 'IdentifyShopper' },
  CHALLENGE_SHOPPER: { resultCode: 'ChallengeShopper' },
};

export interface Behaviour {
  /** Answer this late (the operation is done, and its answer stored, at once). */
  latency_ms?: number;
  /** Do the operation (its answer stored under the key), then answer 500. */
  fail_with_500?: boolean;
  /** Do the operation (its answer stored under the key), then destroy the connection without an answer. */
  drop_connection?: boolean;
  /** How many matching requests the behaviour applies to (default 1). */
  times?: number;
  /** Which requests: method and path prefix (default `POST /v71/payments`, which modifications match too). */
  match?: string;
  /** The next capture, cancel or refund is received, then fails in its notification (success "false"). */
  fail_next?: 'capture' | 'void' | 'refund' | 'reverse';
  /**
   * Do the operation, then answer with another amount.value (a faulty processor, or an answer altered on
   * the way). What Adyen stores (a replay) and notifies stays true.
   */
  tamper_amount?: number;
  /** The same, for the answer's amount.currency. */
  tamper_currency?: string;
}

/**
 * The stored-credential fields a /payments request carried (https://docs.adyen.com/online-payments/tokenization/mit-framework),
 * as the double received them: for tests to assert on.
 */
export interface StoredCredentialUse {
  pspReference: string;
  merchantReference: string;
  shopperInteraction: string | null;
  recurringProcessingModel: string | null;
  /** paymentMethod.networkPaymentReference. */
  networkPaymentReference: string | null;
}

export interface WebhookTarget {
  url: string;
  /** The HMAC key (hex) notifications are signed with. */
  hmacKey: string;
}

/** A notification the double made: the item (unsigned), how often it was sent, whether it was accepted. */
export interface Notification {
  eventCode: string;
  pspReference: string;
  success: 'true' | 'false';
  item: Json;
  attempts: number;
  accepted: boolean;
  /** The receiver's last answer. */
  lastStatus?: number;
}

export interface AdyenDouble {
  url: string;
  state(): {
    payments: Json[]; modifications: Json[]; creates_by_key: Record<string, number>;
    requests: { method: string; path: string; idempotency_key?: string; replayed?: boolean }[]; stored_credentials: StoredCredentialUse[];
  };
  behave(behaviour: Behaviour): void;
  /** Where notifications go (undefined: nowhere; they wait in the queue). */
  setWebhook(target: WebhookTarget | undefined): void;
  /** While held, notifications queue up instead of being sent; unholding sends what queued. */
  holdNotifications(hold: boolean): void;
  /** Queued, not yet accepted (held, or no webhook yet), signed as they would be sent. */
  pendingNotifications(): Json[];
  /** Sends the queued notifications now (each twice with `duplicate`, latest first with `reverse`); resolves once each was accepted or given up. */
  /** Sends the held notifications (`only`: just those of these event codes, the rest stay held). */
  releaseNotifications(options?: { duplicate?: boolean; reverse?: boolean; only?: string[] }): Promise<void>;
  /** Every notification sent at least once, in the order they were made. */
  notificationsSent(): Notification[];
  /** Resolves once nothing is left to send or retry. */
  notificationsIdle(): Promise<void>;
  /**
   * The card scheme rejects a capture after Adyen reported it done (https://docs.adyen.com/online-payments/capture#failed-capture):
   * a CAPTURE_FAILED notification about the payment's last capture (success "true", as in Adyen's contract),
   * and its amount capturable again. Throws when the payment has no capture that went through.
   */
  failCapture(paymentPspReference: string, reason?: string): void;
  /** The disputes' timing: after the capture, the defense period, until a decision (./disputes.ts). */
  disputeTiming(timing: DisputeTiming): void;
  /** Every dispute the double opened, with what its Disputes API calls received. */
  disputes(): DoubleDispute[];
  close(): Promise<void>;
}

/** How long the double waits before each delivery attempt of a notification (then it gives up). */
export const NOTIFICATION_RETRY_MS = [5, 50, 100, 200, 400, 800, 1000, 1000, 1000, 1000];

const hmac = new hmacValidator();

/** A NotificationRequestItem signed with `hmacKey` as Adyen signs it (additionalData.hmacSignature), for tests that forge or alter items. */
export function signItem(item: Json, hmacKey: string): Json {
  const { hmacSignature: _old, ...data } = item.additionalData ?? {};
  const unsigned = { ...item, additionalData: data };
  return { ...item, additionalData: { ...data, hmacSignature: hmac.calculateHmac(unsigned as any, hmacKey) } };
}

/** A standard notification body of one item. */
export function notificationBody(items: Json[]): Json {
  return { live: 'false', notificationItems: items.map((item) => ({ NotificationRequestItem: item })) };
}

const pspReference = () => randomBytes(10).toString('base64').replace(/[^A-Za-z0-9]/g, '').toUpperCase().padEnd(16, 'X').slice(0, 16);

// The vendored contract, compiled once: request bodies, the double's own answers and notifications are checked against it.
const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true, validateSchema: false }));
ajv.addFormat('int32', true).addFormat('int64', true);
ajv.addSchema(checkoutContract, 'checkout').addSchema(webhooksContract, 'webhooks');
const checkoutSchema = (name: string) => ajv.getSchema(`checkout#/components/schemas/${name}`) as ValidateFunction;
const notificationSchema = (eventCode: string): ValidateFunction | undefined => {
  const hook = (webhooksContract.webhooks as Json)[`/${eventCode}`];
  return hook ? ajv.getSchema(`webhooks${hook.post.requestBody.content['application/json'].schema.$ref}`) : undefined;
};

interface Operation { request: string; response: string; segment?: string }
const OPERATIONS: Record<string, Operation> = {
  payments: { request: 'PaymentRequest', response: 'PaymentResponse' },
  captures: { request: 'PaymentCaptureRequest', response: 'PaymentCaptureResponse' },
  cancels: { request: 'PaymentCancelRequest', response: 'PaymentCancelResponse' },
  refunds: { request: 'PaymentRefundRequest', response: 'PaymentRefundResponse' },
  reversals: { request: 'PaymentReversalRequest', response: 'PaymentReversalResponse' },
  details: { request: 'PaymentDetailsRequest', response: 'PaymentDetailsResponse' },
};
const EVENT_OF: Record<string, string> = { captures: 'CAPTURE', cancels: 'CANCELLATION', refunds: 'REFUND', reversals: 'CANCEL_OR_REFUND' };
const FAILS_AS: Record<string, Behaviour['fail_next']> = { captures: 'capture', cancels: 'void', refunds: 'refund', reversals: 'reverse' };

function adyenError(status: number, errorCode: string, message: string, errorType: string) {
  return { status, body: { status, errorCode, message, errorType, pspReference: pspReference() } };
}

/** Adyen's 422 for a body that breaks the contract: the first broken rule, in Adyen's words where we know them. */
function validationError(schemaName: string, validate: ValidateFunction) {
  const errors = validate.errors ?? [];
  const unknown = errors.filter((e) => e.keyword === 'additionalProperties').map((e) => `${e.instancePath.replace(/^\//, '').replace(/\//g, '.')}${e.instancePath ? '.' : ''}${String(e.params.additionalProperty)}`);
  if (unknown.length) return adyenError(422, '702', `Structure of ${schemaName} contains the following unknown fields: [${unknown.join(', ')}]`, 'validation');
  const missing = errors.find((e) => e.keyword === 'required' && e.instancePath === '');
  if (missing) {
    const field = String(missing.params.missingProperty);
    const code = { reference: '130', amount: '100', merchantAccount: '901' }[field] ?? '702';
    return adyenError(422, code, `Required field '${field}' is not provided.`, 'validation');
  }
  const first = errors[0];
  return adyenError(422, '702', `${first?.instancePath || schemaName} ${first?.message ?? 'is not valid'}`.trim(), 'validation');
}

/** An answer with the amount the knobs put in (a copy: the double's own records stay true). */
function tampered(body: unknown, knobs: Behaviour): unknown {
  const { tamper_amount: value, tamper_currency: currency } = knobs;
  const answer = body as Json;
  if ((value === undefined && currency === undefined) || !answer?.amount) return body;
  return { ...answer, amount: { ...answer.amount, ...(value !== undefined ? { value } : {}), ...(currency !== undefined ? { currency } : {}) } };
}

function luhn(number: string): boolean {
  let sum = 0;
  [...number].reverse().forEach((digit, i) => {
    let d = Number(digit);
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  });
  return /^\d{12,19}$/.test(number) && sum % 10 === 0;
}

export async function startAdyenDouble(): Promise<AdyenDouble> {
  const payments = new Map<string, Json>();
  const modifications: Json[] = [];
  const idempotency = new Map<string, { status: number; body: unknown }>();
  const createsByKey: Record<string, number> = {};
  const requests: { method: string; path: string; idempotency_key?: string; replayed?: boolean }[] = [];
  const notifications: Notification[] = [];
  const storedCredentials: StoredCredentialUse[] = [];
  const failNext: NonNullable<Behaviour['fail_next']>[] = [];
  let behaviour: Behaviour | undefined;
  let remaining = 0;
  let webhook: WebhookTarget | undefined;
  let held = false;
  const inFlight = new Set<Promise<void>>();
  let closed = false;
  /** Payments that answered RedirectShopper: the card's expiry (for the AUTHORISATION's reason) and whether the issuer refuses once authenticated. */
  const challenges = new Map<string, { expiry: string; declines: boolean }>();
  const disputeDesk = createDisputeDesk(notify, () => payments);

  // ------------------------------------------------------------------------------------------------
  // Notifications

  function notify(payment: Json, eventCode: string, success: boolean, fields: Json = {}) {
    const item: Json = {
      amount: fields.amount ?? payment.amount,
      eventCode,
      eventDate: new Date().toISOString().replace(/\.\d{3}Z$/, '+00:00'),
      merchantAccountCode: payment.merchantAccount,
      merchantReference: fields.merchantReference ?? payment.merchantReference,
      ...(fields.originalReference ? { originalReference: fields.originalReference } : {}),
      paymentMethod: payment.paymentMethod ?? 'visa',
      pspReference: fields.pspReference ?? payment.pspReference,
      reason: fields.reason ?? '',
      success: success ? 'true' : 'false',
      ...(fields.additionalData ? { additionalData: fields.additionalData } : {}),
    };
    const check = notificationSchema(eventCode);
    if (check && !check(notificationBody([item]))) throw new Error(`the double made a ${eventCode} notification its contract refuses: ${ajv.errorsText(check.errors)}`);
    const notification: Notification = { eventCode, pspReference: item.pspReference, success: item.success, item, attempts: 0, accepted: false };
    notifications.push(notification);
    if (!held && webhook) track(deliver([notification]));
  }

  /** Sends each notification until it is accepted or the retries run out. */
  async function deliver(batch: Notification[]): Promise<void> {
    for (const delay of NOTIFICATION_RETRY_MS) {
      await new Promise((resolve) => setTimeout(resolve, delay));
      const target = webhook;
      if (closed || !target) return;
      const left = batch.filter((n) => !n.accepted);
      if (!left.length) return;
      for (const notification of left) {
        notification.attempts += 1;
        try {
          const res = await fetch(target.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(notificationBody([signItem(notification.item, target.hmacKey)])),
            signal: AbortSignal.timeout(5_000),
          });
          notification.lastStatus = res.status;
          notification.accepted = res.ok && (await res.text()).trim() === '[accepted]';
        } catch {
          notification.lastStatus = 0;
        }
      }
    }
  }

  function track(delivery: Promise<void>) {
    inFlight.add(delivery);
    void delivery.finally(() => inFlight.delete(delivery));
  }

  // ------------------------------------------------------------------------------------------------
  // The API

  function authorize(body: Json): { status: number; body: unknown } {
    const card = body.paymentMethod as Json;
    const number = String(card.number ?? '');
    const month = Number(card.expiryMonth);
    if (!/^\d{1,2}$/.test(String(card.expiryMonth ?? '')) || month < 1 || month > 12 || !/^\d{4}$/.test(String(card.expiryYear ?? ''))) {
      return adyenError(422, '129', 'Expiry Date Invalid', 'validation');
    }
    const expiry = `${String(month).padStart(2, '0')}/${card.expiryYear}`;
    const expired = new Date(Number(card.expiryYear), month, 1) <= new Date();
    const authenticated = issuedByADouble(body.mpiData?.cavv, body.mpiData?.dsTransID);
    // ContAuth: a card-on-file transaction without the shopper (a merchant-initiated renewal), nobody to challenge.
    const reference: string | undefined = card.networkPaymentReference;
    const merchantInitiated = body.shopperInteraction === 'ContAuth' ? (reference ? { networkTransactionId: reference } : {}) : undefined;
    const outcome: TestOutcome = !luhn(number) ? refused('8')
      : expired ? refused('6')
        : testOutcome(holderName(String(card.holderName ?? '')), number, body.authenticationData?.attemptAuthentication === 'always', authenticated, merchantInitiated);
    const manual = body.additionalData?.manualCapture === 'true' || (body.captureDelayHours ?? 0) > 0;
    const payment: Json = {
      pspReference: pspReference(), merchantReference: body.reference, merchantAccount: body.merchantAccount, amount: body.amount,
      resultCode: outcome.resultCode, holderName: card.holderName, last4: number.slice(-4), paymentMethod: number.startsWith('5') ? 'mc' : 'visa',
      captureDelayHours: body.captureDelayHours, manualCapture: manual, disputeCard: DISPUTE_TEST_CARDS[number], recurringProcessingModel: body.recurringProcessingModel, authorised: false, captured: 0, refunded: 0, cancelled: false,
      ...(outcome.refusalReasonCode ? { refusalReasonCode: outcome.refusalReasonCode, refusalReason: outcome.refusalReason } : {}),
    };
    payments.set(payment.pspReference, payment);
    storedCredentials.push({
      pspReference: payment.pspReference, merchantReference: body.reference, shopperInteraction: body.shopperInteraction ?? null,
      recurringProcessingModel: body.recurringProcessingModel ?? null, networkPaymentReference: reference ?? null,
    });
    const answer: Json = {
      pspReference: payment.pspReference, resultCode: outcome.resultCode, amount: body.amount, merchantReference: body.reference,
      ...(outcome.refusalReasonCode ? { refusalReason: outcome.refusalReason, refusalReasonCode: outcome.refusalReasonCode } : {}),
    };
    switch (outcome.resultCode) {
      case 'Authorised':
        authorise(payment, expiry);
        answer.additionalData = { cardSummary: payment.last4, ...networkTxReferenceOf(payment) };
        break;
      case 'Received':
      case 'Pending':
        authorise(payment, expiry);
        break;
      case 'RedirectShopper':
        // The shopper comes back with this redirectResult (opaque at Adyen: here a token only the double knows).
        Object.assign(payment, { challenge: 'waiting', returnUrl: body.returnUrl, redirectResult: randomBytes(24).toString('base64url') });
        challenges.set(payment.pspReference, { expiry, declines: THREE_DS_TEST_CARDS[number]?.declinesAfterAuthentication === true });
        answer.action = { type: 'redirect', method: 'GET', paymentMethodType: 'scheme', url: challengeUrl(double.url, payment.pspReference) };
        break;
      case 'IdentifyShopper':
      case 'ChallengeShopper':
        answer.action = { type: 'threeDS2', paymentMethodType: 'scheme', url: 'https://checkout-test.adyen.com/checkoutshopper/threeDS/redirect' };
        break;
      default:
        notify(payment, 'AUTHORISATION', false, { reason: outcome.refusalReason });
    }
    return { status: 200, body: answer };
  }

  /**
   * An approval's networkTxReference, which Adyen shows to a merchant using the MIT framework without its
   * tokenization: on payments that name a recurringProcessingModel only.
   */
  function networkTxReferenceOf(payment: Json): Json {
    return payment.recurringProcessingModel && payment.networkTxReference ? { networkTxReference: payment.networkTxReference } : {};
  }

  /** An authorisation: its notification, and Adyen's own capture after it unless the payment waits for ours. */
  function authorise(payment: Json, expiry: string, additionalData: Json = {}) {
    payment.authorised = true;
    // The card scheme's id of this approval (additionalData.networkTxReference), as Adyen shows it to merchants using the MIT framework.
    payment.networkTxReference = networkTransactionId();
    notify(payment, 'AUTHORISATION', true, { reason: `${Math.floor(100000 + Math.random() * 899999)}:${payment.last4}:${expiry}`, additionalData: { cardSummary: payment.last4, ...additionalData } });
    if (!payment.manualCapture) {
      payment.captured = payment.amount.value;
      notify(payment, 'CAPTURE', true, { pspReference: pspReference(), originalReference: payment.pspReference });
      disputeDesk.captured(payment);
    }
  }

  /**
   * The challenge page of a RedirectShopper payment. Its first POST decides — approve: authorised (or
   * refused 2 for 4000008400001629), with the 3-D Secure result; fail: refused 11 3D Not Authenticated —
   * and sends the AUTHORISATION notification; every POST sends the browser to the returnUrl with the
   * payment's redirectResult.
   */
  function challengeOf(reference: string): Challenge | undefined {
    const payment = payments.get(reference);
    const waiting = challenges.get(reference);
    if (!payment || !waiting) return undefined;
    return {
      issuer: 'Adyen test issuer',
      description: `Authenticate ${payment.amount.value} ${payment.amount.currency} for ${payment.merchantReference} (${payment.pspReference}).`,
      submit(action) {
        const location = { location: withParams(payment.returnUrl, { redirectResult: payment.redirectResult }) };
        if (payment.challenge !== 'waiting') return location;
        if (action === 'fail') {
          Object.assign(payment, { challenge: 'failed', ...refused('11') });
          notify(payment, 'AUTHORISATION', false, { reason: payment.refusalReason });
          return location;
        }
        const result = issueAuthentication(payment.paymentMethod === 'mc' ? 'mastercard' : 'visa');
        const authentication = {
          cavv: result.cavv, eci: result.eci, dsTransID: result.dsTransactionId, threeDSVersion: result.version, threeDAuthenticated: 'true', threeDOffered: 'true', liabilityShift: 'true',
        };
        Object.assign(payment, { challenge: 'authenticated', authentication });
        if (waiting.declines) {
          Object.assign(payment, refused('2'));
          notify(payment, 'AUTHORISATION', false, { reason: payment.refusalReason, additionalData: authentication });
        } else {
          payment.resultCode = 'Authorised';
          authorise(payment, waiting.expiry, authentication);
        }
        return location;
      },
    };
  }

  /** /payments/details with a redirectResult: how the payment ended, or RedirectShopper while the challenge waits. */
  function details(body: Json): { status: number; body: unknown } {
    const token = body.details?.redirectResult;
    const payment = typeof token === 'string' ? [...payments.values()].find((p) => p.redirectResult === token) : undefined;
    if (!payment) return adyenError(422, '702', 'Invalid redirectResult', 'validation');
    const about = { pspReference: payment.pspReference, merchantReference: payment.merchantReference };
    if (payment.challenge === 'waiting') return { status: 200, body: { ...about, resultCode: 'RedirectShopper' } };
    const additionalData = { cardSummary: payment.last4, ...(payment.authentication ?? {}) };
    if (payment.resultCode === 'Authorised') return { status: 200, body: { ...about, resultCode: 'Authorised', additionalData: { ...additionalData, ...networkTxReferenceOf(payment) } } };
    return { status: 200, body: { ...about, resultCode: 'Refused', refusalReason: payment.refusalReason, refusalReasonCode: payment.refusalReasonCode, additionalData } };
  }

  function modify(segment: string, paymentReference: string, body: Json): { status: number; body: unknown } {
    const modification: Json = {
      pspReference: pspReference(), paymentPspReference: paymentReference, type: segment, reference: body.reference,
      merchantAccount: body.merchantAccount, ...(body.amount ? { amount: body.amount } : {}), status: 'received',
    };
    modifications.push(modification);
    const payment = payments.get(paymentReference);
    const failIndex = failNext.findIndex((operation) => operation === FAILS_AS[segment]);
    const forced = failIndex >= 0;
    if (forced) failNext.splice(failIndex, 1);
    const reason = forced ? 'Modification refused by the double (fail_next)' : refusal(segment, payment, body);
    modification.success = !reason;
    if (!reason && payment) {
      if (segment === 'captures') payment.captured += body.amount.value;
      if (segment === 'captures') disputeDesk.captured(payment);
      if (segment === 'cancels') payment.cancelled = true;
      if (segment === 'refunds') payment.refunded += body.amount.value;
      if (segment === 'reversals') modification.action = reverse(payment);
    }
    const about = payment ?? { merchantAccount: body.merchantAccount, amount: body.amount ?? { currency: 'EUR', value: 0 }, merchantReference: body.reference };
    notify(about, EVENT_OF[segment], !reason, {
      pspReference: modification.pspReference, originalReference: paymentReference, merchantReference: body.reference ?? '',
      amount: body.amount ?? about.amount, reason: reason ?? '',
      ...(modification.action ? { additionalData: { 'modification.action': modification.action } } : {}),
    });
    return { status: 201, body: { merchantAccount: body.merchantAccount, paymentPspReference: paymentReference, pspReference: modification.pspReference, ...(body.reference ? { reference: body.reference } : {}), status: 'received', ...(body.amount ? { amount: body.amount } : {}) } };
  }

  /** A reversal (https://docs.adyen.com/online-payments/reversal): the captured amount refunded, else the authorisation cancelled. */
  function reverse(payment: Json): 'refund' | 'cancel' {
    if (payment.captured > payment.refunded) {
      payment.refunded = payment.captured;
      return 'refund';
    }
    payment.cancelled = true;
    return 'cancel';
  }

  function failCapture(paymentReference: string, reason = 'Capture Failed') {
    const payment = payments.get(paymentReference);
    const capture = [...notifications].reverse()
      .find((n) => n.eventCode === 'CAPTURE' && n.success === 'true' && n.item.originalReference === paymentReference);
    if (!payment || !capture) throw new Error(`no capture went through for payment ${paymentReference}`);
    payment.captured -= capture.item.amount.value;
    notify(payment, 'CAPTURE_FAILED', true, {
      pspReference: capture.pspReference, originalReference: paymentReference, merchantReference: capture.item.merchantReference,
      amount: capture.item.amount, reason,
    });
  }

  /** Why Adyen's accounting would refuse the modification, reported in its notification (undefined: it goes through). */
  function refusal(segment: string, payment: Json | undefined, body: Json): string | undefined {
    if (!payment || !payment.authorised) return 'Original pspReference not found';
    if (body.amount && body.amount.currency !== payment.amount.currency) return 'Modification in different currency than authorisation';
    if (segment === 'captures') {
      if (payment.cancelled) return 'Payment was cancelled';
      if (payment.captured + body.amount.value > payment.amount.value) return 'Insufficient balance on payment';
    }
    if (segment === 'cancels' && (payment.cancelled || payment.captured > 0)) return 'Payment cannot be cancelled';
    if (segment === 'refunds' && payment.refunded + body.amount.value > payment.captured) return 'Insufficient in-process balance on payment';
    if (segment === 'reversals' && (payment.cancelled || (payment.captured > 0 && payment.refunded >= payment.captured))) return 'Payment was already cancelled or refunded';
    return undefined;
  }

  /** The operation itself, once the request passed the checks (and was not an idempotent replay). */
  function route(path: string, body: Json): { status: number; body: unknown } {
    if (path.startsWith(`${DISPUTES_PATH}/`)) return disputeDesk.route(path.slice(DISPUTES_PATH.length + 1), body);
    const m = /^\/v71\/payments(?:\/(details)|\/([^/]+)\/(captures|cancels|refunds|reversals))?$/.exec(path);
    if (!m) return adyenError(404, '000', `Unknown endpoint ${path}`, 'validation');
    const segment = m[1] ?? m[3] ?? 'payments';
    const operation = OPERATIONS[segment];
    const validate = checkoutSchema(operation.request);
    if (!validate(body)) return validationError(operation.request, validate);
    // A details request names no merchant account: the redirectResult stands for the payment.
    if (segment !== 'details' && !body.merchantAccount) return adyenError(403, '901', 'Invalid Merchant Account', 'security');
    const reply = segment === 'payments' ? authorize(body) : segment === 'details' ? details(body) : modify(segment, decodeURIComponent(m[2]), body);
    const check = checkoutSchema(operation.response);
    if (reply.status < 300 && !check(reply.body)) throw new Error(`the double made a ${operation.response} its contract refuses: ${ajv.errorsText(check.errors)}`);
    return reply;
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://double');
    const method = req.method ?? 'GET';
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };

    // The knobs, the inspection endpoint and the issuer's challenge page (not Adyen's API).
    if (serveChallenge(method, url.pathname, text, res, challengeOf)) return;
    if (url.pathname === '/__double/behaviour' && method === 'POST') {
      double.behave(JSON.parse(text || '{}'));
      return answer(200, { ok: true });
    }
    if (url.pathname === '/__double/dispute-timing' && method === 'POST') {
      double.disputeTiming(JSON.parse(text || '{}'));
      return answer(200, { ok: true });
    }
    if (url.pathname === '/__double/state') return answer(200, { ...double.state(), disputes: double.disputes() });

    const idempotencyKey = req.headers['idempotency-key'] as string | undefined;
    const logged: (typeof requests)[number] = { method, path: url.pathname, ...(idempotencyKey ? { idempotency_key: idempotencyKey } : {}) };
    requests.push(logged);
    const apiKey = req.headers['x-api-key'] as string | undefined;
    if (!apiKey || apiKey.startsWith('invalid')) {
      const error = adyenError(401, '000', 'HTTP Status Response - Unauthorized', 'security');
      return answer(error.status, error.body);
    }
    if (method !== 'POST') return answer(405, adyenError(405, '000', `Method ${method} not allowed`, 'validation').body);
    if (!(req.headers['content-type'] ?? '').startsWith('application/json')) {
      return answer(422, adyenError(422, '702', 'Unable to parse the request: the body must be application/json', 'validation').body);
    }
    if (idempotencyKey && idempotencyKey.length > 64) {
      return answer(422, adyenError(422, '702', 'Idempotency-Key is longer than 64 characters', 'validation').body);
    }
    let body: Json;
    try {
      body = JSON.parse(text);
    } catch {
      return answer(422, adyenError(422, '702', 'Unable to parse the request: the body is not JSON', 'validation').body);
    }

    const applies = behaviour && remaining > 0 && `${method} ${url.pathname}`.startsWith(behaviour.match ?? 'POST /v71/payments');
    const knobs = applies ? behaviour : undefined;
    if (applies) remaining -= 1;

    const storeKey = idempotencyKey ? `${apiKey} ${idempotencyKey}` : undefined;
    const stored = storeKey ? idempotency.get(storeKey) : undefined;
    let reply: { status: number; body: unknown };
    if (stored) {
      reply = stored;
      logged.replayed = true;
    } else {
      const before = payments.size;
      reply = route(url.pathname, body);
      if (idempotencyKey && payments.size > before) createsByKey[idempotencyKey] = (createsByKey[idempotencyKey] ?? 0) + 1;
      if (storeKey && reply.status !== 422) idempotency.set(storeKey, { status: reply.status, body: JSON.parse(JSON.stringify(reply.body)) });
    }
    if (knobs?.fail_with_500) reply = adyenError(500, '000', 'An unknown error occurred', 'internal');
    if (knobs && reply.status < 300) reply = { status: reply.status, body: tampered(reply.body, knobs) };
    if (knobs?.latency_ms) await new Promise((resolve) => setTimeout(resolve, knobs.latency_ms));
    if (knobs?.drop_connection) {
      req.socket.destroy();
      return;
    }
    if (!res.destroyed) answer(reply.status, reply.body, idempotencyKey ? { 'idempotency-key': idempotencyKey } : {});
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 500, errorCode: '000', message: String(err), errorType: 'internal' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const double: AdyenDouble = {
    url: `http://127.0.0.1:${port}`,
    state: () => ({
      payments: [...payments.values()], modifications: [...modifications], creates_by_key: { ...createsByKey }, requests: [...requests],
      stored_credentials: storedCredentials.map((use) => ({ ...use })),
    }),
    behave(b: Behaviour) {
      behaviour = b;
      remaining = b.times ?? 1;
      if (b.fail_next) failNext.push(b.fail_next);
    },
    setWebhook(target) {
      webhook = target;
      if (target && !held) track(deliver(notifications.filter((n) => !n.accepted && n.attempts === 0)));
    },
    holdNotifications(hold) {
      held = hold;
      if (!hold && webhook) track(deliver(notifications.filter((n) => !n.accepted && n.attempts === 0)));
    },
    pendingNotifications() {
      const target = webhook;
      return notifications.filter((n) => !n.accepted).map((n) => (target ? signItem(n.item, target.hmacKey) : n.item));
    },
    async releaseNotifications(options = {}) {
      let batch = notifications.filter((n) => !n.accepted && (!options.only || options.only.includes(n.item.eventCode)));
      if (options.reverse) batch = [...batch].reverse();
      if (options.duplicate) {
        // Each sent twice: once more after it was accepted, as Adyen does when it missed the acknowledgement.
        const again = batch.map((n) => ({ ...n, accepted: false, attempts: 0 }));
        await deliver(batch);
        await deliver(again);
        for (const [i, copy] of again.entries()) batch[i].attempts += copy.attempts;
        return;
      }
      await deliver(batch);
    },
    notificationsSent: () => notifications.filter((n) => n.attempts > 0).map((n) => ({ ...n })),
    failCapture,
    disputeTiming: (timing) => disputeDesk.setTiming(timing),
    disputes: () => disputeDesk.disputes(),
    async notificationsIdle() {
      while (inFlight.size) await Promise.allSettled([...inFlight]);
    },
    async close() {
      closed = true;
      disputeDesk.close();
      await Promise.allSettled([...inFlight]);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return double;
}
