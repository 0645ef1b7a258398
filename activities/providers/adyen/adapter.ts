// The `adyen` adapter (docs/connectors.md#adyen): Checkout API v71 through Adyen's official Node library,
// every answer normalized to a ProviderOutcome. The library builds the requests and reads the answers;
// the HTTP is ours (undici, transport.ts), so the call goes to the configured base URL (the library opens
// HTTPS only, to Adyen's hosts) and one timeout bounds all of it. The PAN goes into the /payments request and
// nowhere else; the API key lives in a per-call library client, in activity memory only.

import { CheckoutAPI, Types } from '@adyen/api-library';
import { createHash } from 'node:crypto';
import { ADYEN_CATALOGUE, ADYEN_CHECKOUT_VERSION } from '../../../lib/providers/adyen/credentials';
import { withReason } from '../answer-guard';
import { recordExchange as record } from '../exchange';
import type {
  AuthorizeInput, CaptureInput, CompleteAuthenticationInput, CompleteAuthenticationOutput, GetStatusInput, GetStatusOutput, OperationOutput,
  ProviderAdapter, ProviderExchange, ProviderOutcome, RefundInput, ReverseInput, ThreeDSecureRequest, VoidInput,
} from '../types';
import {
  answersFor, heldModification, heldPayment, modificationOutcome, paymentOutcome, type ModificationResponse,
} from './answers';
import { authenticationOf } from '../../../lib/providers/adyen/notifications';
import { createAdyenTransport, type Call } from './transport';
import { storedCredentialFields } from './stored-credentials';
import { adyenDisputeActions } from './disputes';

export interface AdyenAdapterOptions {
  /** The provider's `config.api_base` (scheme, host, port): where requests go instead of Adyen's endpoint. */
  apiBase?: string;
  /**
   * Which of Adyen's endpoints to use without an api_base: sandbox → the test Checkout API, production →
   * the live one under the credentials' `live_url_prefix`. Default sandbox (a test endpoint moves no money).
   */
  environment?: 'sandbox' | 'production';
  /** The `returnUrl` of a /payments request whose authorize gives none (Adyen requires one on every request). */
  returnUrl?: string;
  /** Bounds the whole call (PROVIDER_TIMEOUT_MS); past it the outcome is `unknown`. */
  timeoutMs?: number;
  /** How long to wait for a connection; past it nothing was sent, so it is a `transport_error`. */
  connectTimeoutMs?: number;
}


/** The adyen adapter. */
export interface AdyenAdapter extends ProviderAdapter {
  completeAuthentication(input: CompleteAuthenticationInput): Promise<CompleteAuthenticationOutput>;
}

/**
 * Adyen reports a refund the card scheme or issuer returned after its REFUND succeeded as
 * REFUNDED_REVERSED; that comes within weeks, so a refund is watched for 30 days after it succeeded.
 */
export const REFUND_REVERSAL_WINDOW_MS = 30 * 24 * 3_600_000;
/**
 * Adyen reports a capture the card scheme rejected as CAPTURE_FAILED, days after the payment was captured
 * (https://docs.adyen.com/online-payments/capture#failed-capture): a captured payment is watched for 7 days.
 */
export const CAPTURE_FAILURE_WINDOW_MS = 7 * 24 * 3_600_000;
/**
 * A charge given up while the shopper authenticated may still be reported AUTHORISATION success: the shopper
 * finishing the challenge late, or the notification itself late (Adyen retries a notification our endpoint
 * did not accept for days). A final payment's workflow listens 7 days after the abandon to reverse it.
 */
export const LATE_AUTHORIZATION_WINDOW_MS = 7 * 24 * 3_600_000;
/** For an authorize without a returnUrl (direct adapter use): Adyen requires one even where no redirect happens. */
export const DEFAULT_RETURN_URL = 'https://switchboard.invalid/return';

export function createAdyenAdapter(options: AdyenAdapterOptions = {}): AdyenAdapter {
  const defaultReturnUrl = options.returnUrl ?? DEFAULT_RETURN_URL;
  const { send } = createAdyenTransport({
    apiBase: options.apiBase, live: options.environment === 'production', timeoutMs: options.timeoutMs, connectTimeoutMs: options.connectTimeoutMs,
  });

  async function operate<T>(credentials: Record<string, unknown>, call: Call<T>, read: (value: T) => { outcome: ProviderOutcome; providerCode?: string }): Promise<OperationOutput> {
    const reply = await send(credentials, call);
    const { outcome, providerCode } = reply.kind === 'ok' ? read(reply.value) : reply;
    return { outcome, exchange: record(withReason(reply.exchange, outcome), outcome, providerCode) };
  }

  /** A modification (capture, cancel, refund, reversal) Adyen receives now and reports on later, by notification. */
  function modify(
    input: CaptureInput | VoidInput | RefundInput | ReverseInput,
    operation: 'capture' | 'void' | 'refund' | 'reverse',
    amount: { value: number; currency: string } | undefined,
    post: (checkout: CheckoutAPI, body: { merchantAccount: string; reference: string }) => Promise<ModificationResponse>,
  ): Promise<OperationOutput> {
    const segment = { capture: 'captures', void: 'cancels', refund: 'refunds', reverse: 'reversals' }[operation];
    const body = { ...(amount ? { amount } : {}), reference: input.idempotencyKey };
    return operate(input.credentials, {
      operation,
      idempotencyKey: input.idempotencyKey,
      path: `/${ADYEN_CHECKOUT_VERSION}/payments/${encodeURIComponent(input.providerReference)}/${segment}`,
      summary: body,
      send: (checkout, merchantAccount) => post(checkout, { reference: body.reference, merchantAccount }),
    }, (response) => ({ outcome: heldModification(modificationOutcome(response, input.providerReference), response, { ...input, amount }) }));
  }

  return {
    identifier: ADYEN_CATALOGUE.identifier,
    capabilities: ADYEN_CATALOGUE.capabilities,
    defaultMethods: ADYEN_CATALOGUE.defaultMethods,
    credentialsSchema: ADYEN_CATALOGUE.credentialsSchema,
    capturesWithAuthorization: true,
    refundReversalWindowMs: REFUND_REVERSAL_WINDOW_MS,
    captureFailureWindowMs: CAPTURE_FAILURE_WINDOW_MS,
    lateAuthorizationWindowMs: LATE_AUTHORIZATION_WINDOW_MS,
    ...adyenDisputeActions(send),

    authorize(input: AuthorizeInput) {
      const { card } = input;
      const amount = { value: input.amount, currency: input.currency.toUpperCase() };
      const returnUrl = input.returnUrl ?? defaultReturnUrl;
      // Capture at once: Adyen captures by itself (captureDelayHours 0). Otherwise the payment waits for
      // our capture, whatever the merchant account's default capture delay.
      const capture = input.capture ? { captureDelayHours: 0 } : { additionalData: { manualCapture: 'true' } };
      const threeDS = threeDSecureFields(input.threeDSecure);
      const stored = storedCredentialFields(input.recurring);
      return operate(input.credentials, {
        operation: 'authorize',
        idempotencyKey: input.idempotencyKey,
        path: `/${ADYEN_CHECKOUT_VERSION}/payments`,
        summary: {
          amount, reference: input.idempotencyKey, returnUrl, ...capture, ...threeDS.summary, ...stored.summary, paymentMethod: { type: 'scheme', last4: card.number.slice(-4) },
        },
        send: (checkout, merchantAccount) => checkout.PaymentsApi.payments({
          amount,
          reference: input.idempotencyKey,
          merchantAccount,
          returnUrl,
          ...capture,
          ...threeDS.fields,
          ...stored.fields,
          paymentMethod: {
            ...stored.card,
            type: Types.checkout.CardDetails.TypeEnum.Scheme,
            number: card.number,
            expiryMonth: String(card.exp_month).padStart(2, '0'),
            expiryYear: String(card.exp_year),
            ...(card.cvc ? { cvc: card.cvc } : {}),
            ...(card.holder_name ? { holderName: card.holder_name } : {}),
          },
        }, { idempotencyKey: input.idempotencyKey }),
      }, (response) => heldPayment(paymentOutcome(response, { amount: input.amount, captured: input.capture === true, reference: input.idempotencyKey }), response, {
        amount, reference: input.idempotencyKey,
      }));
    },

    /**
     * The shopper is back from the challenge with Adyen's `redirectResult`: /payments/details tells how
     * the payment ended, and its additionalData the 3-D Secure result to pass on. Without a redirectResult
     * nothing is asked (an answer would be stored under the key for good): the payment still waits.
     */
    async completeAuthentication(input: CompleteAuthenticationInput): Promise<CompleteAuthenticationOutput> {
      const redirectResult = input.returnParams.redirectResult;
      const waiting: ProviderOutcome = { kind: 'requires_action', providerReference: input.providerReference, redirectUrl: input.redirectUrl ?? '' };
      if (!redirectResult) {
        const error = 'no redirectResult among the return parameters: the shopper has not come back from the challenge';
        const exchange: Omit<ProviderExchange, 'outcome'> = {
          operation: 'authenticate', idempotency_key: input.idempotencyKey, request: { method: 'NONE', path: '' }, error, started_at: new Date().toISOString(), duration_ms: 0,
        };
        return { outcome: waiting, exchange: record(exchange, waiting) };
      }
      // One key per redirectResult: Adyen stores the first answer under a key, so a forged return (the
      // return endpoint takes no credentials) must not take the key the shopper's real return will use.
      const idempotencyKey = `${input.idempotencyKey}:${createHash('sha256').update(redirectResult).digest('hex').slice(0, 16)}`;
      const reply = await send(input.credentials, {
        operation: 'authenticate',
        idempotencyKey,
        path: `/${ADYEN_CHECKOUT_VERSION}/payments/details`,
        // The redirectResult stands for the payment's result: named, not stored.
        summary: { details: { redirectResult: '[given]' } },
        send: (checkout) => checkout.PaymentsApi.paymentsDetails({ details: { redirectResult } }, { idempotencyKey }),
      });
      // Adyen refusing the details request (a 4xx: a redirectResult it does not know) is no verdict on the
      // payment — anyone can call our return endpoint with made-up parameters: still waiting.
      if (reply.kind === 'error' && (reply.outcome.kind === 'hard_decline' || reply.outcome.kind === 'soft_decline')) {
        return { outcome: waiting, exchange: record(reply.exchange, waiting, reply.providerCode) };
      }
      if (reply.kind === 'error') return { outcome: reply.outcome, exchange: record(reply.exchange, reply.outcome, reply.providerCode) };
      const response = reply.value;
      // The return endpoint takes no credentials: a redirectResult of another payment, brought back to
      // this charge's return URL, answers for that payment. It says nothing of this one: still waiting.
      if (!answersFor(response, input)) {
        const error = `the details answer is for another payment (pspReference ${response.pspReference ?? 'none'}, merchantReference ${response.merchantReference ?? 'none'})`;
        return { outcome: waiting, exchange: record({ ...reply.exchange, error }, waiting) };
      }
      // Not done yet (a redirectResult from before the challenge ended): a details answer repeats no action.
      const { outcome, providerCode } = String(response.resultCode) === 'RedirectShopper' && !response.action
        ? { outcome: waiting, providerCode: 'RedirectShopper' }
        : heldPayment(paymentOutcome(response, { amount: input.amount, captured: input.capture === true, reference: input.providerReference }), response, {
          amount: { value: input.amount }, reference: input.reference,
        });
      const authentication = authenticationOf(response.additionalData);
      return { outcome, exchange: record(withReason(reply.exchange, outcome), outcome, providerCode), ...(authentication ? { authentication } : {}) };
    },

    capture(input: CaptureInput) {
      if (input.amount === undefined) return Promise.resolve(missingAmount(input, 'capture'));
      const amount = { value: input.amount, currency: input.currency.toUpperCase() };
      return modify(input, 'capture', amount, (checkout, body) => checkout.ModificationsApi.captureAuthorisedPayment(
        input.providerReference, { ...body, amount }, { idempotencyKey: input.idempotencyKey },
      ));
    },

    void(input: VoidInput) {
      return modify(input, 'void', undefined, (checkout, body) => checkout.ModificationsApi.cancelAuthorisedPaymentByPspReference(
        input.providerReference, body, { idempotencyKey: input.idempotencyKey },
      ));
    },

    refund(input: RefundInput) {
      const amount = { value: input.amount, currency: input.currency.toUpperCase() };
      return modify(input, 'refund', amount, (checkout, body) => checkout.ModificationsApi.refundCapturedPayment(
        input.providerReference, { ...body, amount }, { idempotencyKey: input.idempotencyKey },
      ));
    },

    /** Cancel or refund (the whole amount), whichever the payment needs: its outcome comes by a CANCEL_OR_REFUND notification. */
    reverse(input: ReverseInput) {
      return modify(input, 'reverse', undefined, (checkout, body) => checkout.ModificationsApi.refundOrCancelPayment(
        input.providerReference, body, { idempotencyKey: input.idempotencyKey },
      ));
    },

    /** Checkout has no look-up by our reference: an unknown outcome is settled by the notification that follows. */
    async getStatus(input: GetStatusInput): Promise<GetStatusOutput> {
      const error = 'Adyen has no look-up by reference; the AUTHORISATION notification settles it';
      return {
        lookup: 'failed',
        error,
        exchange: {
          operation: 'get_status', idempotency_key: input.idempotencyKey, request: { method: 'NONE', path: '' },
          outcome: 'unknown', error, started_at: new Date().toISOString(), duration_ms: 0,
        },
      };
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Normalizing Adyen's answers

/**
 * 3-D Secure on a /payments request: a previous authentication as mpiData (Adyen authorizes with it,
 * no challenge), or a challenge asked for (authenticationData.attemptAuthentication `always`, the step-up).
 * The summary never shows the CAVV.
 */
function threeDSecureFields(threeDSecure: ThreeDSecureRequest | undefined): { fields: Partial<Types.checkout.PaymentRequest>; summary: Record<string, unknown> } {
  const external = threeDSecure?.external;
  if (external) {
    const shown = {
      eci: external.eci, dsTransID: external.dsTransactionId, threeDSVersion: external.version,
      authenticationResponse: Types.checkout.ThreeDSecureData.AuthenticationResponseEnum.Y, directoryResponse: Types.checkout.ThreeDSecureData.DirectoryResponseEnum.Y,
    };
    return { fields: { mpiData: { ...shown, cavv: external.cavv } }, summary: { mpiData: shown } };
  }
  if (threeDSecure?.requested) {
    const authenticationData = { attemptAuthentication: Types.checkout.AuthenticationData.AttemptAuthenticationEnum.Always };
    return { fields: { authenticationData }, summary: { authenticationData } };
  }
  return { fields: {}, summary: {} };
}

/** A capture or refund the contract gave no currency (or a capture no amount): Adyen's `amount` needs both. */
function missingAmount(input: CaptureInput | RefundInput, operation: 'capture' | 'refund'): OperationOutput {
  const outcome: ProviderOutcome = { kind: 'hard_decline', declineCode: 'invalid_request', message: `an adyen ${operation} needs its amount and currency` };
  const exchange: Omit<ProviderExchange, 'outcome'> = {
    operation, idempotency_key: input.idempotencyKey, request: { method: 'POST', path: `/${ADYEN_CHECKOUT_VERSION}/payments/${input.providerReference}/${operation}s` },
    error: outcome.message, started_at: new Date().toISOString(), duration_ms: 0,
  };
  return { outcome, exchange: record(exchange, outcome) };
}
