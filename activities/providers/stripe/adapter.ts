// The `stripe` adapter (docs/connectors.md): PaymentIntents through Stripe's official Node library,
// every answer normalized to a ProviderOutcome. The PAN goes into the create request and nowhere else;
// the secret key lives in the library's client, in activity memory only.

import Stripe from 'stripe';
import { STRIPE_CATALOGUE, stripeApiBaseParts, type StripeCredentials } from '../../../lib/providers/stripe/credentials';
import { guardAnswer, withReason, type Money } from '../answer-guard';
import { recordExchange as record, redactSecrets } from '../exchange';
import type {
  AuthorizeInput, CaptureInput, CompleteAuthenticationInput, CompleteAuthenticationOutput, GetStatusInput, GetStatusOutput, OperationOutput,
  ProviderAdapter, ProviderExchange, ProviderOutcome, RefundInput, ThreeDSecureRequest, VoidInput,
} from '../types';
import {
  authenticatedOutcome, CHARGE_ID_METADATA, errorOutcome, intentCode, intentOutcome, otherIntent, otherRefund, REFUND_ID_METADATA, refundOutcome,
} from '../../../lib/providers/stripe/outcomes';
import { mergedCardOptions, storedCredentialParams } from './stored-credentials';
import { stripeDisputeActions } from './disputes';
import type { Call, Reply } from './call';

export interface StripeAdapterOptions {
  /** The provider's `config.api_base` (scheme, host, port); default Stripe's API. */
  apiBase?: string;
  /** Bounds the whole call (PROVIDER_TIMEOUT_MS); past it the outcome is `unknown`. */
  timeoutMs?: number;
}

export const DEFAULT_TIMEOUT_MS = 10_000;
/** Stripe's search index lags behind writes ("typically within a minute"): an empty search is not conclusive before this. */
export const SEARCH_SETTLE_MS = 120_000;
/**
 * A succeeded refund can still fail at Stripe (the card was closed or expired meanwhile: `refund.failed`,
 * the refund `failed`); the bank tells within weeks, so a refund is watched for 30 days after it succeeded.
 */
export const REFUND_REVERSAL_WINDOW_MS = 30 * 24 * 3_600_000;
/** Pinned, so the shapes we read do not move under us. */
export const STRIPE_API_VERSION = '2025-02-24.acacia';
/**
 * Where the customer would come back to when the authorize has no returnUrl (direct adapter use): Stripe
 * answers a challenge with a redirect_to_url only when it has a return_url.
 */
export const DEFAULT_RETURN_URL = 'https://switchboard.invalid/return';

// Errors raised before the request could reach Stripe: safe to try another provider. Anything else after
// sending (timeouts, resets) leaves the outcome unknown.
const NOT_DELIVERED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export function createStripeAdapter(options: StripeAdapterOptions = {}): ProviderAdapter {
  const { protocol, host, port } = stripeApiBaseParts(options.apiBase);
  const timeout = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // One client per secret key (the library keeps its agent per client).
  const clients = new Map<string, Stripe>();

  function client(credentials: Record<string, unknown>): Stripe {
    const key = (credentials as Partial<StripeCredentials>).secret_key ?? '';
    let found = clients.get(key);
    if (!found) {
      found = new Stripe(key, {
        apiVersion: STRIPE_API_VERSION, host, port, protocol, timeout, maxNetworkRetries: 0, telemetry: false,
      });
      if (clients.size > 100) clients.clear();
      clients.set(key, found);
    }
    return found;
  }

  async function send<T>(credentials: Record<string, unknown>, call: Call<T>): Promise<Reply<T>> {
    const startedAt = new Date();
    const started = performance.now();
    const exchange = (response?: { status: number; body?: unknown }, error?: string): Omit<ProviderExchange, 'outcome'> => ({
      operation: call.operation,
      idempotency_key: call.idempotencyKey,
      request: { method: call.method, path: call.path, ...(call.summary ? { body: call.summary } : {}) },
      ...(response ? { response: { status: response.status, body: redactSecrets(response.body) } } : {}),
      ...(error ? { error } : {}),
      started_at: startedAt.toISOString(),
      duration_ms: Math.round(performance.now() - started),
    });
    try {
      const value = await call.send(client(credentials));
      const body = withoutLastResponse(value);
      return { kind: 'ok', value, exchange: exchange({ status: value.lastResponse.statusCode, body: call.shown ? call.shown(body as T) : body }) };
    } catch (err) {
      if (!(err instanceof Stripe.errors.StripeError)) throw err;
      if (err instanceof Stripe.errors.StripeConnectionError) {
        const code = (err as { detail?: { code?: unknown } }).detail?.code;
        const error = `${typeof code === 'string' ? code : 'connection'}: ${err.message}`;
        const outcome: ProviderOutcome = typeof code === 'string' && NOT_DELIVERED.has(code) ? { kind: 'transport_error', error } : { kind: 'unknown', error };
        return { kind: 'error', outcome, exchange: exchange(undefined, error) };
      }
      const status = err.statusCode ?? 0;
      const body = err.raw;
      return { kind: 'error', outcome: errorOutcome(err), exchange: exchange(status ? { status, body: { error: body } } : undefined, status ? undefined : err.message) };
    }
  }

  /** One call, its answer read as an outcome; `code` tells Stripe's own code behind an outcome read from a 2xx answer. */
  async function operate<T>(
    credentials: Record<string, unknown>, call: Call<T>, read: (value: T) => ProviderOutcome, code?: (value: T) => string | undefined,
  ): Promise<OperationOutput> {
    const reply = await send(credentials, call);
    const outcome = reply.kind === 'ok' ? read(reply.value) : reply.outcome;
    const providerCode = reply.kind === 'error' ? providerCodeOf(reply.exchange) : outcome.kind.endsWith('_decline') ? code?.(reply.value) : undefined;
    return { outcome, exchange: record(withReason(reply.exchange, outcome), outcome, providerCode) };
  }

  /**
   * A capture or void whose outcome is unknown: the intent itself tells whether it got there (replaying
   * under the same key would only replay a stored 5xx). Still unknown when it did not.
   */
  async function settledBy(
    input: CaptureInput | VoidInput, result: OperationOutput, target: 'succeeded' | 'canceled', read: (intent: Stripe.PaymentIntent) => ProviderOutcome,
  ): Promise<OperationOutput> {
    if (result.outcome.kind !== 'unknown') return result;
    const reply = await send(input.credentials, {
      operation: 'get_status', idempotencyKey: input.idempotencyKey, method: 'GET', path: `/v1/payment_intents/${input.providerReference}`,
      send: (stripe) => stripe.paymentIntents.retrieve(input.providerReference),
    });
    if (reply.kind === 'error' || reply.value.status !== target) return result;
    const outcome = read(reply.value);
    return { outcome, exchange: record(withReason(reply.exchange, outcome), outcome) };
  }

  return {
    identifier: STRIPE_CATALOGUE.identifier,
    capabilities: STRIPE_CATALOGUE.capabilities,
    defaultMethods: STRIPE_CATALOGUE.defaultMethods,
    credentialsSchema: STRIPE_CATALOGUE.credentialsSchema,
    notFoundSettleMs: SEARCH_SETTLE_MS,
    refundReversalWindowMs: REFUND_REVERSAL_WINDOW_MS,
    ...stripeDisputeActions(send),

    authorize(input: AuthorizeInput) {
      const { card } = input;
      const captureMethod = input.capture ? 'automatic' : 'manual';
      const returnUrl = input.returnUrl ?? DEFAULT_RETURN_URL;
      const threeDS = threeDSecureParams(input.threeDSecure);
      const stored = storedCredentialParams(input.recurring);
      return operate(input.credentials, {
        operation: 'authorize',
        idempotencyKey: input.idempotencyKey,
        method: 'POST',
        path: '/v1/payment_intents',
        summary: {
          amount: input.amount, currency: input.currency.toLowerCase(), capture_method: captureMethod, confirm: true, return_url: returnUrl,
          ...mergedCardOptions(threeDS.summary, stored.summary), card: { last4: card.number.slice(-4) },
        },
        // The latest charge is expanded for its network transaction id; the record keeps only its id.
        shown: (intent) => ({ ...intent, latest_charge: typeof intent.latest_charge === 'object' ? intent.latest_charge?.id ?? null : intent.latest_charge }),
        send: (stripe) => stripe.paymentIntents.create({
          amount: input.amount,
          currency: input.currency.toLowerCase(),
          confirm: true,
          capture_method: captureMethod,
          return_url: returnUrl,
          expand: ['latest_charge'],
          ...mergedCardOptions(threeDS.params, stored.params),
          payment_method_types: ['card'],
          payment_method_data: {
            type: 'card',
            card: { number: card.number, exp_month: card.exp_month, exp_year: card.exp_year, ...(card.cvc ? { cvc: card.cvc } : {}) },
            ...(card.holder_name ? { billing_details: { name: card.holder_name } } : {}),
          // Raw card numbers in payment_method_data need Stripe's PCI approval and are absent from the
          // library's types, which model the tokenized form only; the wire form is the same.
          } as unknown as Stripe.PaymentIntentCreateParams.PaymentMethodData,
          metadata: { ...(input.metadata ?? {}), [CHARGE_ID_METADATA]: input.idempotencyKey },
        }, { idempotencyKey: input.idempotencyKey }),
      }, guardedIntent({ amount: input.amount, currency: input.currency }, { chargeId: input.idempotencyKey }, (intent) => intent.amount));
    },

    /**
     * The customer is back from Stripe's challenge (redirect_to_url): the intent says how it ended. Stripe
     * shows no cryptogram, so there is no `authentication` to pass on to another provider.
     */
    completeAuthentication(input: CompleteAuthenticationInput): Promise<CompleteAuthenticationOutput> {
      const reference = input.providerReference;
      return operate(input.credentials, {
        operation: 'authenticate',
        idempotencyKey: input.idempotencyKey,
        method: 'GET',
        path: `/v1/payment_intents/${reference}`,
        send: (stripe) => stripe.paymentIntents.retrieve(reference, { expand: ['latest_charge'] }),
      }, guardedIntent({ amount: input.amount }, { id: reference, chargeId: input.reference }, (intent) => intent.amount, authenticatedOutcome), intentCode);
    },

    async capture(input: CaptureInput) {
      const params = input.amount === undefined ? {} : { amount_to_capture: input.amount };
      // What was captured is what was asked (the whole authorization when no amount is given).
      const read = guardedIntent({ amount: input.amount, currency: input.currency }, { id: input.providerReference }, (intent) => intent.amount_received);
      const result = await operate(input.credentials, {
        operation: 'capture',
        idempotencyKey: input.idempotencyKey,
        method: 'POST',
        path: `/v1/payment_intents/${input.providerReference}/capture`,
        summary: params,
        send: (stripe) => stripe.paymentIntents.capture(input.providerReference, params, { idempotencyKey: input.idempotencyKey }),
      }, read);
      return settledBy(input, result, 'succeeded', read);
    },

    async void(input: VoidInput) {
      const read = guardedIntent({}, { id: input.providerReference }, (intent) => intent.amount);
      const result = await operate(input.credentials, {
        operation: 'void',
        idempotencyKey: input.idempotencyKey,
        method: 'POST',
        path: `/v1/payment_intents/${input.providerReference}/cancel`,
        send: (stripe) => stripe.paymentIntents.cancel(input.providerReference, {}, { idempotencyKey: input.idempotencyKey }),
      }, read);
      return settledBy(input, result, 'canceled', read);
    },

    refund(input: RefundInput) {
      return operate(input.credentials, {
        operation: 'refund',
        idempotencyKey: input.idempotencyKey,
        method: 'POST',
        path: '/v1/refunds',
        summary: { payment_intent: input.providerReference, amount: input.amount },
        send: (stripe) => stripe.refunds.create({
          payment_intent: input.providerReference, amount: input.amount, metadata: { [REFUND_ID_METADATA]: input.idempotencyKey }, expand: ['charge'],
        }, { idempotencyKey: input.idempotencyKey }),
      }, (refund) => guardAnswer(refundOutcome(refund), { amount: input.amount, currency: input.currency }, { amount: refund.amount, currency: refund.currency },
        otherRefund(refund, { intentId: input.providerReference, refundId: input.idempotencyKey })));
    },

    /**
     * Stripe keeps a 5xx answer under its idempotency key, so replaying the call cannot tell what
     * happened: the charge is found by its metadata (a search); a refund among its intent's refunds.
     */
    async getStatus(input: GetStatusInput): Promise<GetStatusOutput> {
      const key = input.idempotencyKey;
      if (key.startsWith('re_')) {
        if (!input.providerReference) {
          return { lookup: 'failed', error: 'a refund is looked up among its payment intent\'s refunds', exchange: { operation: 'get_status', idempotency_key: key, request: { method: 'GET', path: '/v1/refunds' }, outcome: 'unknown', started_at: new Date().toISOString(), duration_ms: 0 } };
        }
        const reference = input.providerReference;
        const reply = await send(input.credentials, {
          operation: 'get_status', idempotencyKey: key, method: 'GET', path: `/v1/refunds?payment_intent=${reference}`,
          send: (stripe) => stripe.refunds.list({ payment_intent: reference, limit: 100, expand: ['data.charge'] }),
        });
        if (reply.kind === 'error') return { lookup: 'failed', error: errorText(reply.outcome), exchange: record(reply.exchange, reply.outcome) };
        const refund = reply.value.data.find((r) => !otherRefund(r, { intentId: reference, refundId: key }));
        if (!refund) return { lookup: 'not_found', exchange: { ...reply.exchange, outcome: 'not_found' } };
        const outcome = refundOutcome(refund);
        return { lookup: 'found', operation: 'refund', outcome, exchange: record(reply.exchange, outcome) };
      }
      const query = `metadata['${CHARGE_ID_METADATA}']:'${key.replace(/'/g, '')}'`;
      const reply = await send(input.credentials, {
        operation: 'get_status', idempotencyKey: key, method: 'GET', path: '/v1/payment_intents/search', summary: { query },
        send: (stripe) => stripe.paymentIntents.search({ query, limit: 10 }),
      });
      if (reply.kind === 'error') return { lookup: 'failed', error: errorText(reply.outcome), exchange: record(reply.exchange, reply.outcome) };
      // Only the intent made under this key: a search may list others (a loose match, a stale index).
      const intent = reply.value.data.find((found) => !otherIntent(found, { chargeId: key }));
      if (!intent) return { lookup: 'not_found', exchange: { ...reply.exchange, outcome: 'not_found' } };
      const outcome = intentOutcome(intent);
      return { lookup: 'found', operation: 'authorize', outcome, exchange: record(reply.exchange, outcome, intentCode(intent)) };
    },
  };
}

/**
 * 3-D Secure on a create: a previous authentication imported as payment_method_options.card.three_d_secure
 * (with error_on_requires_action, so Stripe fails the payment rather than challenge a second time), or a
 * challenge asked for (request_three_d_secure `any`, the step-up). The summary never shows the cryptogram.
 */
function threeDSecureParams(threeDSecure: ThreeDSecureRequest | undefined): { params: Partial<Stripe.PaymentIntentCreateParams>; summary: Record<string, unknown> } {
  const external = threeDSecure?.external;
  if (external) {
    const imported = {
      cryptogram: external.cavv,
      electronic_commerce_indicator: external.eci as Stripe.PaymentIntentCreateParams.PaymentMethodOptions.Card.ThreeDSecure.ElectronicCommerceIndicator,
      transaction_id: external.dsTransactionId,
      version: external.version as Stripe.PaymentIntentCreateParams.PaymentMethodOptions.Card.ThreeDSecure.Version,
    };
    const { cryptogram: _secret, ...shown } = imported;
    return {
      params: { payment_method_options: { card: { three_d_secure: imported } }, error_on_requires_action: true },
      summary: { payment_method_options: { card: { three_d_secure: shown } }, error_on_requires_action: true },
    };
  }
  if (threeDSecure?.requested) {
    const options = { card: { request_three_d_secure: 'any' as const } };
    return { params: { payment_method_options: options }, summary: { payment_method_options: options } };
  }
  return { params: {}, summary: {} };
}

// ---------------------------------------------------------------------------------------------------
// Reading what Stripe answered

/**
 * An intent read as an outcome, held to the request: the intent asked about (`expected`), and `moved` —
 * the amount the operation is about (authorized, captured) — and the currency those asked for.
 */
function guardedIntent(
  asked: Money, expected: { id?: string; chargeId?: string }, moved: (intent: Stripe.PaymentIntent) => number,
  read: (intent: Stripe.PaymentIntent) => ProviderOutcome = intentOutcome,
): (intent: Stripe.PaymentIntent) => ProviderOutcome {
  return (intent) => guardAnswer(read(intent), asked, { amount: moved(intent), currency: intent.currency }, otherIntent(intent, expected));
}

function providerCodeOf(exchange: Omit<ProviderExchange, 'outcome'>): string | undefined {
  const body = exchange.response?.body as { error?: { decline_code?: unknown; code?: unknown; type?: unknown } } | undefined;
  const code = body?.error?.decline_code ?? body?.error?.code ?? body?.error?.type;
  return typeof code === 'string' ? code : undefined;
}

function errorText(outcome: ProviderOutcome): string {
  return 'error' in outcome ? outcome.error : 'declineCode' in outcome ? outcome.declineCode : outcome.kind;
}

function withoutLastResponse(value: object): unknown {
  const { lastResponse: _omitted, ...rest } = value as Record<string, unknown>;
  return rest;
}
