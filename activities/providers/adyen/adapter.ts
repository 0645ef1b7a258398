// The `adyen` adapter (docs/connectors.md#adyen): Checkout API v71 through Adyen's official Node library,
// every answer normalized to a ProviderOutcome. The library builds the requests and reads the answers;
// the HTTP is ours (undici), so the call goes to the configured base URL (the library opens HTTPS only,
// to Adyen's hosts) and one timeout bounds all of it. The PAN goes into the /payments request and
// nowhere else; the API key lives in a per-call library client, in activity memory only.

import { CheckoutAPI, Client, EnvironmentEnum, HttpClientException, Types } from '@adyen/api-library';
import { createHash } from 'node:crypto';
import { Agent, request } from 'undici';
import {
  ADYEN_CATALOGUE, ADYEN_CHECKOUT_VERSION, ADYEN_TEST_API_BASE, adyenLiveApiBase, type AdyenCredentials,
} from '../../../lib/providers/adyen';
import { withReason } from '../answer-guard';
import { recordExchange as record, redactSecrets } from '../exchange';
import { errorCode, isObject, parseJson } from '../wire';
import type {
  AuthorizeInput, CaptureInput, CompleteAuthenticationInput, CompleteAuthenticationOutput, GetStatusInput, GetStatusOutput, OperationOutput,
  ProviderAdapter, ProviderExchange, ProviderOperation, ProviderOutcome, RefundInput, ReverseInput, ThreeDSecureRequest, VoidInput,
} from '../types';
import {
  answersFor, errorOutcome, heldModification, heldPayment, modificationOutcome, paymentOutcome, type ModificationResponse,
} from './answers';
import { authenticationOf, parseAdyenWebhook, withoutCardData } from './notifications';

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

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 2_000;
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

// Errors raised before the request could reach Adyen: safe to try another provider. Anything else after
// sending (timeouts, resets) leaves the outcome unknown.
const NOT_DELIVERED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

type HttpClient = NonNullable<ConstructorParameters<typeof Client>[1]>;

/** What went over the wire in one call, as our HTTP client saw it. */
interface Wire {
  status?: number;
  body?: unknown;
}

interface Call<T> {
  operation: ProviderOperation;
  idempotencyKey: string;
  path: string;
  /** What the exchange record shows of the request: an allow-list, never the card. */
  summary: Record<string, unknown>;
  send: (checkout: CheckoutAPI, merchantAccount: string) => Promise<T>;
}

type Reply<T> =
  | { kind: 'ok'; value: T; exchange: Omit<ProviderExchange, 'outcome'> }
  | { kind: 'error'; outcome: ProviderOutcome; providerCode?: string; exchange: Omit<ProviderExchange, 'outcome'> };

export function createAdyenAdapter(options: AdyenAdapterOptions = {}): AdyenAdapter {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const defaultReturnUrl = options.returnUrl ?? DEFAULT_RETURN_URL;
  const live = options.environment === 'production';
  const agent = new Agent({
    connect: { timeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });

  /** Where the call goes: the api_base, else Adyen's test or live endpoint (the latter under the account's prefix). */
  function baseUrl(credentials: Partial<AdyenCredentials>): string | undefined {
    if (options.apiBase) return new URL(options.apiBase).origin;
    if (!live) return ADYEN_TEST_API_BASE;
    return credentials.live_url_prefix ? adyenLiveApiBase(credentials.live_url_prefix) : undefined;
  }

  /** The library's HTTP hook: its request, sent by undici to `base` and bounded by the timeout; `wire` keeps the answer. */
  function httpClient(base: string, wire: Wire): HttpClient {
    return {
      async request(endpoint, json, config, _apiKeyRequired, requestOptions) {
        const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
        if (config.apiKey) headers['x-api-key'] = config.apiKey;
        if (requestOptions?.idempotencyKey) headers['idempotency-key'] = requestOptions.idempotencyKey;
        const response = await request(rebased(endpoint, base, requestOptions?.params), {
          method: requestOptions?.method === 'GET' ? 'GET' : 'POST',
          headers,
          body: json || undefined,
          dispatcher: agent,
          signal: AbortSignal.timeout(timeoutMs),
        });
        const text = await response.body.text();
        wire.status = response.statusCode;
        wire.body = parseJson(text);
        if (response.statusCode >= 200 && response.statusCode < 300) return text;
        const apiError = isObject(wire.body) ? wire.body : undefined;
        throw new HttpClientException({
          message: `HTTP ${response.statusCode}`,
          statusCode: response.statusCode,
          errorCode: typeof apiError?.errorCode === 'string' ? apiError.errorCode : undefined,
          responseBody: text,
        });
      },
    };
  }

  async function send<T>(credentials: Record<string, unknown>, call: Call<T>): Promise<Reply<T>> {
    const startedAt = new Date();
    const started = performance.now();
    const wire: Wire = {};
    const exchange = (error?: string): Omit<ProviderExchange, 'outcome'> => ({
      operation: call.operation,
      idempotency_key: call.idempotencyKey,
      request: { method: 'POST', path: call.path, body: call.summary },
      ...(wire.status !== undefined ? { response: { status: wire.status, body: redactSecrets(withoutCardData(wire.body)) } } : {}),
      ...(error ? { error } : {}),
      started_at: startedAt.toISOString(),
      duration_ms: Math.round(performance.now() - started),
    });
    const given = credentials as Partial<AdyenCredentials>;
    const base = baseUrl(given);
    if (!base) {
      const error = 'live_url_prefix missing: a live adyen config needs it (or the provider a config.api_base)';
      return { kind: 'error', outcome: { kind: 'transport_error', error }, exchange: exchange(error) };
    }
    // The library's environment only picks the host our HTTP client replaces; LIVE insists on a prefix.
    const client = new Client({
      apiKey: given.api_key,
      environment: live && given.live_url_prefix ? EnvironmentEnum.LIVE : EnvironmentEnum.TEST,
      liveEndpointUrlPrefix: given.live_url_prefix,
    }, httpClient(base, wire));
    try {
      const value = await call.send(new CheckoutAPI(client), given.merchant_account ?? '');
      return { kind: 'ok', value, exchange: exchange() };
    } catch (err) {
      const text = err instanceof Error ? err.message : String(err);
      if (wire.status !== undefined && (wire.status < 200 || wire.status >= 300)) {
        const { outcome, providerCode } = errorOutcome(call.operation, wire.status, wire.body);
        return { kind: 'error', outcome, providerCode, exchange: exchange() };
      }
      // Answered 2xx but unreadable: money may have moved.
      if (wire.status !== undefined) return { kind: 'error', outcome: { kind: 'unknown', error: `unreadable answer: ${text}` }, exchange: exchange(text) };
      const code = errorCode(err);
      const error = `${code ?? (err instanceof Error ? err.name : 'error')}: ${text}`;
      const outcome: ProviderOutcome = code && NOT_DELIVERED.has(code) ? { kind: 'transport_error', error } : { kind: 'unknown', error };
      return { kind: 'error', outcome, exchange: exchange(error) };
    }
  }

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
    parseWebhook: parseAdyenWebhook,

    authorize(input: AuthorizeInput) {
      const { card } = input;
      const amount = { value: input.amount, currency: input.currency.toUpperCase() };
      const returnUrl = input.returnUrl ?? defaultReturnUrl;
      // Capture at once: Adyen captures by itself (captureDelayHours 0). Otherwise the payment waits for
      // our capture, whatever the merchant account's default capture delay.
      const capture = input.capture ? { captureDelayHours: 0 } : { additionalData: { manualCapture: 'true' } };
      const threeDS = threeDSecureFields(input.threeDSecure);
      return operate(input.credentials, {
        operation: 'authorize',
        idempotencyKey: input.idempotencyKey,
        path: `/${ADYEN_CHECKOUT_VERSION}/payments`,
        summary: { amount, reference: input.idempotencyKey, returnUrl, ...capture, ...threeDS.summary, paymentMethod: { type: 'scheme', last4: card.number.slice(-4) } },
        send: (checkout, merchantAccount) => checkout.PaymentsApi.payments({
          amount,
          reference: input.idempotencyKey,
          merchantAccount,
          returnUrl,
          ...capture,
          ...threeDS.fields,
          paymentMethod: {
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

/** The library's endpoint (Adyen's host, `/v71/…`) moved onto our base URL. */
function rebased(endpoint: string, base: string, params: ConstructorParameters<typeof URLSearchParams>[0] | undefined): string {
  const { pathname } = new URL(endpoint);
  const at = pathname.indexOf(`/${ADYEN_CHECKOUT_VERSION}/`);
  if (at < 0) throw new Error(`not a Checkout ${ADYEN_CHECKOUT_VERSION} endpoint: ${endpoint}`);
  const query = params ? `?${new URLSearchParams(params).toString()}` : '';
  return `${base}${pathname.slice(at)}${query}`;
}
