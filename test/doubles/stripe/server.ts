// A local double of Stripe's HTTP API (the parts the `stripe` adapter uses), on 127.0.0.1 and a random
// port. It checks requests as Stripe does (Bearer sk_test_ key, form-encoded bodies, Idempotency-Key:
// same key + same params → the stored answer, 5xx included; same key + other params → 400
// idempotency_error) and answers with Stripe's published resource shapes (./fixtures, MIT).
//
// Test cards: https://docs.stripe.com/testing. Knobs: POST /__double/behaviour; state: GET /__double/state
// (with the stored-credential parameters each confirmed create carried: off_session, setup_future_usage,
// the card's mit_exemption; an approval's charge shows a network_transaction_id).
//
// 3-D Secure (https://docs.stripe.com/payments/3d-secure): the test cards of ../three-d-secure ask for a
// challenge; with a return_url the intent answers `requires_action` with next_action.redirect_to_url to
// the double's challenge page (`/__double/3ds/<pi>`), whose POST ends the authentication as Stripe would
// and sends the browser back to the return_url. Without one, next_action is `use_stripe_sdk`.
//
// Webhooks as Stripe sends them (https://docs.stripe.com/webhooks): once setWebhook() names an endpoint,
// every state change is an event (`evt_…`, `data.object` = the resource as the double shows it), POSTed
// a few ms later with a `Stripe-Signature` made by the official library, and retried with backoff while
// the endpoint answers anything but 2xx. Knobs hold, reorder and duplicate them.
//
// Disputes (./disputes.ts): Stripe's dispute test cards are disputed a moment after capture, with the
// charge.dispute.* events; GET/POST /v1/disputes/:id and /close answer them. Their timing: POST
// /__double/dispute-timing or disputeTiming(); what was asked of them: state().dispute_requests.

import { randomBytes } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { Challenge, challengeUrl, issueAuthentication, issuedByADouble, issuerStep, networkTransactionId, serveChallenge, THREE_DS_TEST_CARDS, withParams } from '../three-d-secure';
import fixtures from './fixtures/resources.json';
import { createDisputes, DisputeRequest, DisputeTiming } from './disputes';

type Params = Record<string, any>;

interface Decline { code: string; decline_code?: string; message: string }

/**
 * What a card number makes the issuer say: approve or decline (code, decline_code). The 3-D Secure test
 * cards (4000002760003184, 4000000000003220, 4000008400001629, 4000000000003055, 4000002500003155) are
 * the shared THREE_DS_TEST_CARDS; any other 16-digit Visa number approves.
 */
export const TEST_CARDS: Record<string, { decline?: Decline }> = {
  '4242424242424242': {},
  '5555555555554444': {},
  '378282246310005': {},
  '6011111111111117': {},
  '4000000000000002': { decline: { code: 'card_declined', decline_code: 'generic_decline', message: 'Your card was declined.' } },
  '4000000000009995': { decline: { code: 'card_declined', decline_code: 'insufficient_funds', message: 'Your card has insufficient funds.' } },
  '4000000000009987': { decline: { code: 'card_declined', decline_code: 'lost_card', message: 'Your card was declined.' } },
  '4000000000009979': { decline: { code: 'card_declined', decline_code: 'stolen_card', message: 'Your card was declined.' } },
  '4100000000000019': { decline: { code: 'card_declined', decline_code: 'fraudulent', message: 'Your card was declined.' } },
  '4000000000000069': { decline: { code: 'expired_card', decline_code: 'expired_card', message: 'Your card has expired.' } },
  '4000000000000127': { decline: { code: 'incorrect_cvc', decline_code: 'incorrect_cvc', message: 'Your card\'s security code is incorrect.' } },
  '4000000000000119': { decline: { code: 'processing_error', decline_code: 'processing_error', message: 'An error occurred while processing your card. Try again in a little bit.' } },
};

/** The step-up card without a request for 3-D Secure, or any challenge under error_on_requires_action. */
const AUTHENTICATION_REQUIRED: Decline = { code: 'card_declined', decline_code: 'authentication_required', message: 'Your card was declined. This transaction requires authentication.' };
/** 4000008400001629 once authenticated. */
const DECLINED_AFTER_AUTHENTICATION: Decline = { code: 'card_declined', decline_code: 'generic_decline', message: 'Your card was declined.' };
const INCORRECT_NUMBER: Decline = { code: 'incorrect_number', message: 'Your card number is incorrect.' };
/** last_payment_error of an intent whose cardholder failed (or abandoned) the challenge. */
const AUTHENTICATION_FAILURE = {
  type: 'invalid_request_error', code: 'payment_intent_authentication_failure', doc_url: 'https://stripe.com/docs/error-codes/payment-intent-authentication-failure',
  message: 'The provided PaymentMethod has failed authentication. You can provide payment_method_data or a new PaymentMethod to attempt to fulfill this PaymentIntent again.',
};

export interface Behaviour {
  /** Answer this late (the operation is done at once, as a slow network would have it). */
  latency_ms?: number;
  /** Do the operation, then answer 500 (stored under the idempotency key, as Stripe does). */
  fail_with_500?: boolean;
  /** Do the operation, then destroy the connection without an answer. */
  drop_connection?: boolean;
  /** How many matching requests the behaviour applies to (default 1). */
  times?: number;
  /** Which requests: method and path prefix (default `POST /v1/payment_intents`, or `POST /v1/refunds` with refund_status). */
  match?: string;
  /** The status a refund is created with (default `succeeded`); a `pending` one ends by settleRefund(). */
  refund_status?: RefundStatus;
  /**
   * Do the operation, then answer with another amount (a faulty processor, or an answer altered on the
   * way): an intent's amount, and its amount_received / amount_capturable when not 0; a refund's amount.
   * What Stripe stores (a replay, a retrieve, a search) stays true.
   */
  tamper_amount?: number;
  /** The same, for the answer's currency. */
  tamper_currency?: string;
  /** A search answers every intent, those the query does not match first (a loose or stale index). */
  search_lists_others?: boolean;
}

export type RefundStatus = 'succeeded' | 'pending' | 'requires_action' | 'failed' | 'canceled';

/** An event as Stripe sends it (https://docs.stripe.com/api/events/object). */
export interface StripeEvent {
  id: string;
  object: 'event';
  api_version: string;
  created: number;
  data: { object: any; previous_attributes?: Record<string, unknown> };
  livemode: false;
  pending_webhooks: number;
  /** The API request that caused it; ids null when Stripe itself changed the resource (a refund settling). */
  request: { id: string | null; idempotency_key: string | null };
  type: string;
}

/** One POST of an event to the endpoint: `status` as answered, 0 when no answer came (then `error`). */
export interface WebhookDelivery {
  eventId: string;
  type: string;
  attempt: number;
  status: number;
  error?: string;
  /** When it was sent (ms since the epoch). */
  at: number;
}

/** The API version events are rendered in: the endpoint's, registered with the adapter's pinned version. */
export const WEBHOOK_API_VERSION = '2025-02-24.acacia';
/** Retries after the first attempt, at 50 ms doubling to 1 s (Stripe retries for three days; tests cannot wait). */
export const WEBHOOK_MAX_RETRIES = 10;
const WEBHOOK_DELAY_MS = 5;
const WEBHOOK_TIMEOUT_MS = 5_000;

/** A `Stripe-Signature` header for a payload, as Stripe makes it: `t=<seconds>,v1=<HMAC-SHA256 of "t.payload">`. */
export function signStripePayload(payload: string, secret: string, timestamp = now()): string {
  return Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });
}

interface Stored { fingerprint: string; status: number; body: unknown }

/**
 * The stored-credential parameters a confirmed create carried (https://docs.stripe.com/payments/save-during-payment,
 * https://docs.stripe.com/payments/cits-and-mits), as the double received them: for tests to assert on.
 */
export interface StoredCredentialUse {
  intent: string;
  /** The create's metadata switchboard_charge_id (the adapter's charge id). */
  charge_id: string | null;
  setup_future_usage: string | null;
  off_session: boolean;
  /** payment_method_options[card][mit_exemption][network_transaction_id]. */
  mit_network_transaction_id: string | null;
}

export interface StripeDouble {
  url: string;
  /** Intents, refunds, every event (delivered or not), and how many intents each idempotency key created. */
  state(): {
    intents: any[]; refunds: any[]; events: StripeEvent[]; creates_by_key: Record<string, number>; requests: { method: string; path: string; idempotency_key?: string }[];
    stored_credentials: StoredCredentialUse[]; disputes: any[]; dispute_requests: DisputeRequest[];
  };
  behave(behaviour: Behaviour): void;
  /** When disputes come and are decided, and when their evidence is due (replaces the previous knobs; ./disputes.ts). */
  disputeTiming(timing: DisputeTiming): void;
  /** The webhook endpoint events go to from now on (null: none, events are only listed in state()). */
  setWebhook(endpoint: { url: string; secret: string } | null): void;
  /** While on, events are kept (pendingWebhooks()) instead of sent, until releaseWebhooks(). */
  holdWebhooks(on: boolean): void;
  pendingWebhooks(): StripeEvent[];
  /**
   * Sends the held events one after the other (each once its first POST is answered; retries go on
   * behind), in reverse order or each twice when asked. Holding stays as it was.
   */
  releaseWebhooks(options?: { duplicate?: boolean; reverse?: boolean }): Promise<void>;
  /** Every POST made so far, retries included, with the status answered. */
  webhooksSent(): WebhookDelivery[];
  /** Resolves once no event is waiting to be sent or retried (held ones aside). */
  webhooksIdle(): Promise<void>;
  /**
   * A `pending` (or `requires_action`) refund ends: refund.updated, plus refund.failed when it failed. A
   * `succeeded` one may still fail, as at Stripe when the card was closed meanwhile: the same two events,
   * `previous_attributes.status` `succeeded`, and the amount back on the charge.
   */
  settleRefund(refundId: string, status: 'succeeded' | 'failed'): any;
  close(): Promise<void>;
}

const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;
const now = () => Math.floor(Date.now() / 1000);

/** Stripe's form encoding: a[b][c]=v and a[0]=v, nested. */
export function parseForm(text: string): Params {
  const out: Params = {};
  for (const [key, value] of new URLSearchParams(text)) {
    const parts = key.replace(/\]/g, '').split('[');
    let target: any = out;
    parts.forEach((part, i) => {
      if (i === parts.length - 1) target[part] = value;
      else target = target[part] ??= /^\d+$/.test(parts[i + 1]) ? [] : {};
    });
  }
  return out;
}

/** A card as a charge's payment_method_details show it: never the number or CVC. */
function cardDetails(card: { number: string; exp_month?: string; exp_year?: string }) {
  const brand = ({ 3: 'amex', 4: 'visa', 5: 'mastercard', 6: 'discover' } as Record<string, string>)[card.number[0]] ?? 'unknown';
  return {
    type: 'card',
    card: {
      brand, last4: card.number.slice(-4), exp_month: Number(card.exp_month), exp_year: Number(card.exp_year), country: 'US', funding: 'credit',
      fingerprint: randomBytes(8).toString('hex'), checks: { address_line1_check: null, address_postal_code_check: null, cvc_check: 'pass' }, network: brand,
    },
  };
}

/** An intent or refund answer with the amount and currency the knobs put in (a copy: the double's own record stays true). */
function tampered(body: unknown, knobs: Behaviour): unknown {
  const { tamper_amount: amount, tamper_currency: currency } = knobs;
  if ((amount === undefined && currency === undefined) || typeof body !== 'object' || body === null) return body;
  const answer: any = JSON.parse(JSON.stringify(body));
  if (amount !== undefined) {
    answer.amount = amount;
    for (const field of ['amount_received', 'amount_capturable']) if (answer[field]) answer[field] = amount;
  }
  if (currency !== undefined) answer.currency = currency;
  return answer;
}

function stripeError(status: number, error: Record<string, unknown>) {
  return { status, body: { error } };
}

/**
 * Stripe's checks of the 3-D Secure parameters of a create (https://docs.stripe.com/api/payment_intents/create):
 * payment_method_options[card][request_three_d_secure], [three_d_secure] (imported results: cryptogram,
 * transaction_id and version required), return_url (a URL, with confirm=true only), error_on_requires_action.
 */
function threeDSecureError(p: Params) {
  const invalid = (param: string, message: string, code = 'parameter_invalid') => stripeError(400, { type: 'invalid_request_error', code, param, message });
  const options = p.payment_method_options?.card ?? {};
  const request = options.request_three_d_secure;
  if (request !== undefined && !['any', 'automatic', 'challenge'].includes(request)) {
    return invalid('payment_method_options[card][request_three_d_secure]', `Invalid request_three_d_secure: must be one of any, automatic, or challenge`);
  }
  const imported = options.three_d_secure;
  if (imported !== undefined) {
    const param = (field: string) => `payment_method_options[card][three_d_secure][${field}]`;
    for (const field of ['cryptogram', 'transaction_id', 'version']) {
      if (typeof imported[field] !== 'string' || imported[field] === '') return invalid(param(field), `Missing required param: ${param(field)}.`, 'parameter_missing');
    }
    if (!['1.0.2', '2.1.0', '2.2.0'].includes(imported.version)) return invalid(param('version'), 'Invalid version: must be one of 1.0.2, 2.1.0, or 2.2.0');
    const eci = imported.electronic_commerce_indicator;
    if (eci !== undefined && !['01', '02', '05', '06', '07'].includes(eci)) return invalid(param('electronic_commerce_indicator'), 'Invalid electronic_commerce_indicator: must be one of 01, 02, 05, 06, or 07');
  }
  if (p.return_url !== undefined) {
    if (!/^https?:\/\/[^\s]+$/.test(String(p.return_url))) return invalid('return_url', 'Not a valid URL', 'url_invalid');
    if (p.confirm !== 'true') return invalid('return_url', 'The parameter return_url can only be passed when confirm is set to true.');
  }
  if (p.error_on_requires_action !== undefined && !['true', 'false'].includes(p.error_on_requires_action)) return invalid('error_on_requires_action', 'Invalid boolean');
  return storedCredentialError(p, invalid);
}

/** Stripe's checks of off_session, setup_future_usage and the card's mit_exemption. */
function storedCredentialError(p: Params, invalid: (param: string, message: string, code?: string) => ReturnType<typeof stripeError>) {
  if (p.off_session !== undefined && !['true', 'false'].includes(p.off_session)) return invalid('off_session', 'Invalid boolean');
  if (p.off_session !== undefined && p.confirm !== 'true') return invalid('off_session', 'The parameter off_session can only be passed when confirm is set to true.');
  if (p.setup_future_usage !== undefined && !['on_session', 'off_session'].includes(p.setup_future_usage)) {
    return invalid('setup_future_usage', 'Invalid setup_future_usage: must be one of on_session or off_session');
  }
  const mit = p.payment_method_options?.card?.mit_exemption;
  if (mit !== undefined && (typeof mit.network_transaction_id !== 'string' || mit.network_transaction_id === '')) {
    return invalid('payment_method_options[card][mit_exemption][network_transaction_id]', 'Invalid network_transaction_id');
  }
  return undefined;
}

/** A charge's payment_method_details.card.three_d_secure: what Stripe shows of an authentication (no cryptogram). */
function threeDSecureDetails(eci: string | null, transactionId: string, version: string, flow: 'challenge' | null) {
  return { authentication_flow: flow, electronic_commerce_indicator: eci, result: 'authenticated', result_reason: null, transaction_id: transactionId, version };
}

export async function startStripeDouble(): Promise<StripeDouble> {
  const intents = new Map<string, any>();
  const charges = new Map<string, any>();
  const refunds = new Map<string, any>();
  const idempotency = new Map<string, Stored>();
  const createsByKey: Record<string, number> = {};
  const requests: { method: string; path: string; idempotency_key?: string }[] = [];
  const storedCredentials: StoredCredentialUse[] = [];
  /** Intents created with setup_future_usage or off_session: their approvals show a network transaction id. */
  const storedCredentialIntents = new Set<string>();
  let behaviour: Behaviour | undefined;
  let remaining = 0;
  /** Intents at the challenge page: the card as their charge will show it, where the browser goes back, whether the issuer declines once authenticated. */
  const waiting = new Map<string, { details: ReturnType<typeof cardDetails>; returnUrl: string; declines: boolean }>();
  /** Where each challenge page sent the browser, by intent: a second POST goes there again. */
  const challenged = new Map<string, string>();

  // Webhooks
  const events: StripeEvent[] = [];
  const held: StripeEvent[] = [];
  const deliveries: WebhookDelivery[] = [];
  let endpoint: { url: string; secret: string } | null = null;
  let holding = false;
  let closed = false;
  /** The request being handled, named by the events it causes. */
  let cause: StripeEvent['request'] = { id: null, idempotency_key: null };
  /** First attempts go out in order, one after the other; retries run beside them. */
  let outbox: Promise<void> = Promise.resolve();
  const running = new Set<Promise<void>>();
  const sleeping = new Map<NodeJS.Timeout, () => void>();
  const closing = new AbortController();

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (closed) return resolve();
      const timer = setTimeout(() => { sleeping.delete(timer); resolve(); }, ms);
      sleeping.set(timer, resolve);
    });
  }

  function track(work: Promise<void>): Promise<void> {
    running.add(work);
    void work.finally(() => running.delete(work));
    return work;
  }

  function emit(type: string, object: unknown, previous?: Record<string, unknown>) {
    const event: StripeEvent = {
      id: id('evt'), object: 'event', api_version: WEBHOOK_API_VERSION, created: now(),
      data: { object: JSON.parse(JSON.stringify(object)), ...(previous ? { previous_attributes: previous } : {}) },
      livemode: false, pending_webhooks: endpoint ? 1 : 0, request: { ...cause }, type,
    };
    events.push(event);
    if (!endpoint) return;
    if (holding) held.push(event);
    else void send([event], WEBHOOK_DELAY_MS);
  }

  /** Queues the first attempts of these events; resolves once each has been answered. */
  function send(batch: StripeEvent[], delayMs = 0): Promise<void> {
    outbox = outbox.then(async () => {
      if (delayMs) await sleep(delayMs);
      for (const event of batch) await deliver(event, JSON.stringify(event, null, 2));
    }).catch(() => undefined);
    return track(outbox);
  }

  /** One POST; on anything but 2xx, the next one later (behind the queue), up to WEBHOOK_MAX_RETRIES. */
  async function deliver(event: StripeEvent, payload: string, attempt = 1): Promise<void> {
    const target = endpoint;
    if (closed || !target) return;
    let status = 0;
    let error: string | undefined;
    const at = Date.now();
    try {
      const res = await fetch(target.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json; charset=utf-8', 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)', 'stripe-signature': signStripePayload(payload, target.secret) },
        body: payload,
        signal: AbortSignal.any([closing.signal, AbortSignal.timeout(WEBHOOK_TIMEOUT_MS)]),
      });
      status = res.status;
      await res.arrayBuffer();
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    if (closed) return;
    deliveries.push({ eventId: event.id, type: event.type, attempt, status, ...(error ? { error } : {}), at });
    if ((status >= 200 && status < 300) || attempt > WEBHOOK_MAX_RETRIES) return;
    void track(sleep(Math.min(50 * 2 ** (attempt - 1), 1000)).then(() => deliver(event, payload, attempt + 1)));
  }

  const disputes = createDisputes({
    emit,
    emitAutomatic(type, object, previous) {
      cause = { id: null, idempotency_key: null };
      emit(type, object, previous);
    },
    sleep,
    closed: () => closed,
  });

  const intentView = (pi: any, expand: string[] = []) => ({
    ...pi,
    latest_charge: expand.includes('latest_charge') && pi.latest_charge ? charges.get(pi.latest_charge) : pi.latest_charge,
  });

  function createIntent(p: Params): { status: number; body: unknown } {
    const amount = Number(p.amount);
    if (!Number.isInteger(amount) || amount < 50) return stripeError(400, { type: 'invalid_request_error', code: 'amount_too_small', param: 'amount', message: 'Amount must be at least $0.50 usd' });
    if (typeof p.currency !== 'string' || !/^[a-z]{3}$/.test(p.currency)) return stripeError(400, { type: 'invalid_request_error', code: 'parameter_invalid', param: 'currency', message: 'Invalid currency' });
    const captureMethod = p.capture_method ?? 'automatic';
    if (!['automatic', 'manual', 'automatic_async'].includes(captureMethod)) return stripeError(400, { type: 'invalid_request_error', code: 'parameter_invalid', param: 'capture_method', message: 'Invalid capture_method' });
    const card = p.payment_method_data?.card;
    if (p.payment_method_data?.type !== 'card' || !card?.number) {
      return stripeError(400, { type: 'invalid_request_error', code: 'parameter_missing', param: 'payment_method_data[card][number]', message: 'Missing required param: payment_method_data[card][number].' });
    }
    const invalid = threeDSecureError(p);
    if (invalid) return invalid;
    const options = p.payment_method_options?.card ?? {};
    const pi: any = {
      ...fixtures.payment_intent,
      id: id('pi'), amount, amount_capturable: 0, amount_received: 0, capture_method: captureMethod, created: now(), currency: p.currency,
      canceled_at: null, cancellation_reason: null, last_payment_error: null, latest_charge: null, next_action: null,
      metadata: p.metadata ?? {}, payment_method: id('pm'), payment_method_options: { card: { request_three_d_secure: options.request_three_d_secure ?? 'automatic' } },
      payment_method_types: ['card'], setup_future_usage: p.setup_future_usage ?? null, status: 'requires_confirmation',
    };
    pi.client_secret = `${pi.id}_secret_${randomBytes(8).toString('hex')}`;
    intents.set(pi.id, pi);
    emit('payment_intent.created', intentView(pi));
    if (p.confirm !== 'true') return { status: 200, body: pi };
    const offSession = p.off_session === 'true';
    const mitId: string | undefined = options.mit_exemption?.network_transaction_id;
    if (p.setup_future_usage || offSession) storedCredentialIntents.add(pi.id);
    storedCredentials.push({
      intent: pi.id, charge_id: pi.metadata?.switchboard_charge_id ?? null, setup_future_usage: p.setup_future_usage ?? null, off_session: offSession,
      mit_network_transaction_id: mitId ?? null,
    });
    const details = cardDetails(card);
    disputes.paidWith(pi.id, card.number);
    const declined = (decline: Decline, threeDSecure?: unknown) => {
      const error = settle(pi, details, decline, threeDSecure);
      return stripeError(402, { ...error, payment_intent: pi });
    };
    const known = TEST_CARDS[card.number];
    if (known?.decline) return declined(known.decline);
    if (!known && !THREE_DS_TEST_CARDS[card.number] && !/^4\d{15}$/.test(card.number)) return declined(INCORRECT_NUMBER);
    // Imported 3-D Secure data counts when a double issued it (a forged cryptogram authenticates nothing).
    const imported = options.three_d_secure;
    const authenticated = issuedByADouble(imported?.cryptogram, imported?.transaction_id);
    const importedResult = authenticated ? threeDSecureDetails(imported.electronic_commerce_indicator ?? null, imported.transaction_id, imported.version, null) : undefined;
    const step = issuerStep(card.number, {
      requested: ['any', 'challenge'].includes(options.request_three_d_secure), authenticated,
      ...(offSession ? { merchantInitiated: mitId ? { networkTransactionId: mitId } : {} } : {}),
    });
    if (step === 'decline') return declined(DECLINED_AFTER_AUTHENTICATION, importedResult);
    if (step === 'authentication_required' || (step === 'challenge' && p.error_on_requires_action === 'true')) return declined(AUTHENTICATION_REQUIRED);
    if (step === 'challenge') {
      const returnUrl: string | undefined = p.return_url;
      if (returnUrl) waiting.set(pi.id, { details, returnUrl, declines: THREE_DS_TEST_CARDS[card.number].declinesAfterAuthentication === true });
      // Without a return_url Stripe leaves the challenge to Stripe.js in the customer's browser.
      const nextAction = returnUrl
        ? { type: 'redirect_to_url', redirect_to_url: { url: challengeUrl(double.url, pi.id), return_url: returnUrl } }
        : { type: 'use_stripe_sdk', use_stripe_sdk: { type: 'three_d_secure_redirect', stripe_js: challengeUrl(double.url, pi.id) } };
      Object.assign(pi, { status: 'requires_action', next_action: nextAction });
      emit('payment_intent.requires_action', intentView(pi));
      return { status: 200, body: pi };
    }
    settle(pi, details, undefined, importedResult);
    return { status: 200, body: pi };
  }

  /**
   * The issuer's answer once nothing more is asked of the customer: a charge that succeeded (captured or
   * not, by capture_method) or failed with `decline`, and the intent where that leaves it, with their
   * events. A decline answers the error Stripe puts in last_payment_error.
   */
  function settle(pi: any, details: ReturnType<typeof cardDetails>, decline?: Decline, threeDSecure?: unknown): Record<string, unknown> | undefined {
    // An approval's network transaction id (payment_method_details.card.network_transaction_id): "present if
    // returned by the financial network, null otherwise" — the double returns one for stored-credential intents only.
    const shown = !decline && storedCredentialIntents.has(pi.id);
    const card = { ...details.card, network_transaction_id: shown ? networkTransactionId() : null, ...(threeDSecure ? { three_d_secure: threeDSecure } : {}) };
    const charge: any = {
      ...fixtures.charge, id: id('ch'), amount: pi.amount, amount_captured: 0, amount_refunded: 0, captured: false, created: now(), currency: pi.currency,
      metadata: pi.metadata, payment_intent: pi.id, refunded: false, payment_method: pi.payment_method,
      payment_method_details: { ...details, card },
    };
    charges.set(charge.id, charge);
    Object.assign(pi, { latest_charge: charge.id, next_action: null });
    if (decline) {
      const error = {
        type: 'card_error', ...decline, charge: charge.id, doc_url: `https://stripe.com/docs/error-codes/${decline.code}`,
        payment_method: { id: pi.payment_method, object: 'payment_method', type: 'card', card: details.card },
      };
      Object.assign(charge, { status: 'failed', paid: false, failure_code: decline.code, failure_message: decline.message });
      Object.assign(pi, { status: 'requires_payment_method', last_payment_error: error, payment_method: null });
      emit('charge.failed', charge);
      emit('payment_intent.payment_failed', intentView(pi));
      return error;
    }
    if (pi.capture_method === 'manual') {
      Object.assign(pi, { status: 'requires_capture', amount_capturable: pi.amount });
      emit('charge.succeeded', charge);
      emit('payment_intent.amount_capturable_updated', intentView(pi), { amount_capturable: 0 });
    } else {
      Object.assign(pi, { status: 'succeeded', amount_received: pi.amount });
      Object.assign(charge, { captured: true, amount_captured: pi.amount });
      emit('charge.succeeded', charge);
      emit('payment_intent.succeeded', intentView(pi));
      disputes.captured(pi, charge);
    }
    return undefined;
  }

  /**
   * The challenge page of an intent that answered redirect_to_url. Its first POST ends the
   * authentication as Stripe would — approve: the issuer's answer (settle); fail: requires_payment_method
   * with payment_intent_authentication_failure — then sends the browser to the return_url with
   * payment_intent, payment_intent_client_secret and redirect_status. A later POST changes nothing.
   */
  function challengeOf(intentId: string): Challenge | undefined {
    const pi = intents.get(intentId);
    const wait = waiting.get(intentId);
    if (!pi || !wait) return undefined;
    return {
      issuer: 'Stripe test issuer',
      description: `Authenticate ${pi.amount} ${pi.currency.toUpperCase()} for ${pi.id}.`,
      submit(action) {
        const earlier = challenged.get(intentId);
        if (earlier) return { location: earlier };
        if (pi.status !== 'requires_action') return { refused: `This PaymentIntent is ${pi.status}: nothing to authenticate.` };
        cause = { id: null, idempotency_key: null };
        if (action === 'fail') {
          Object.assign(pi, {
            status: 'requires_payment_method', next_action: null, payment_method: null,
            last_payment_error: { ...AUTHENTICATION_FAILURE, payment_method: { id: pi.payment_method, object: 'payment_method', type: 'card', card: wait.details.card } },
          });
          emit('payment_intent.payment_failed', intentView(pi));
        } else {
          const result = issueAuthentication(wait.details.card.brand);
          settle(pi, wait.details, wait.declines ? DECLINED_AFTER_AUTHENTICATION : undefined, threeDSecureDetails(result.eci, result.dsTransactionId, result.version, 'challenge'));
        }
        const succeeded = pi.status === 'requires_capture' || pi.status === 'succeeded';
        const location = withParams(wait.returnUrl, { payment_intent: pi.id, payment_intent_client_secret: pi.client_secret, redirect_status: succeeded ? 'succeeded' : 'failed' });
        challenged.set(intentId, location);
        return { location };
      },
    };
  }

  function capture(pi: any, p: Params) {
    if (pi.status !== 'requires_capture') return unexpectedState(pi, 'capture');
    const amount = p.amount_to_capture === undefined ? pi.amount_capturable : Number(p.amount_to_capture);
    if (!Number.isInteger(amount) || amount < 1 || amount > pi.amount_capturable) {
      return stripeError(400, { type: 'invalid_request_error', code: 'amount_too_large', param: 'amount_to_capture', message: 'The amount to capture exceeds the capturable amount.' });
    }
    const charge = charges.get(pi.latest_charge);
    Object.assign(charge, { captured: true, amount_captured: amount });
    Object.assign(pi, { status: 'succeeded', amount_capturable: 0, amount_received: amount });
    emit('charge.captured', charge);
    emit('payment_intent.succeeded', intentView(pi));
    disputes.captured(pi, charge);
    return { status: 200, body: pi };
  }

  function cancel(pi: any) {
    if (!['requires_capture', 'requires_payment_method', 'requires_confirmation', 'requires_action'].includes(pi.status)) return unexpectedState(pi, 'cancel');
    Object.assign(pi, { status: 'canceled', amount_capturable: 0, canceled_at: now(), cancellation_reason: null });
    emit('payment_intent.canceled', intentView(pi));
    return { status: 200, body: pi };
  }

  function unexpectedState(pi: any, what: string) {
    return stripeError(400, {
      type: 'invalid_request_error', code: 'payment_intent_unexpected_state',
      message: `You cannot ${what} this PaymentIntent because it has a status of ${pi.status}.`, payment_intent: pi,
    });
  }

  function createRefund(p: Params, status: RefundStatus = 'succeeded') {
    const pi = intents.get(p.payment_intent);
    if (!pi) return stripeError(404, { type: 'invalid_request_error', code: 'resource_missing', param: 'payment_intent', message: `No such payment_intent: '${p.payment_intent}'` });
    const charge = charges.get(pi.latest_charge);
    if (pi.status !== 'succeeded' || !charge) return stripeError(400, { type: 'invalid_request_error', code: 'charge_not_captured', message: 'This PaymentIntent has no captured charge to refund.' });
    const disputed = disputes.refundRefusal(charge.id);
    if (disputed) return disputed;
    const left = charge.amount_captured - charge.amount_refunded;
    const amount = p.amount === undefined ? left : Number(p.amount);
    if (left <= 0) return stripeError(400, { type: 'invalid_request_error', code: 'charge_already_refunded', message: `Charge ${charge.id} has already been refunded.` });
    if (!Number.isInteger(amount) || amount < 1 || amount > left) {
      return stripeError(400, { type: 'invalid_request_error', code: 'amount_too_large', param: 'amount', message: `Refund amount ($${amount / 100}) is greater than unrefunded amount on charge ($${left / 100})` });
    }
    const refund: any = {
      ...fixtures.refund, id: id('re'), amount, charge: charge.id, created: now(), currency: charge.currency, metadata: p.metadata ?? {},
      payment_intent: pi.id, status, ...(status === 'failed' || status === 'canceled' ? { failure_reason: 'expired_or_canceled_card' } : {}),
    };
    refunds.set(refund.id, refund);
    emit('refund.created', refund);
    if (status === 'failed' || status === 'canceled') {
      emit('refund.failed', refund);
      return { status: 200, body: refund };
    }
    // A pending refund counts in the charge's amount_refunded already, as at Stripe (taken back if it fails).
    refundCharge(charge, amount);
    emit('charge.refunded', charge);
    return { status: 200, body: refund };
  }

  function refundCharge(charge: any, amount: number) {
    Object.assign(charge, { amount_refunded: charge.amount_refunded + amount, refunded: charge.amount_refunded + amount === charge.amount_captured });
  }

  function settleRefund(refundId: string, status: 'succeeded' | 'failed') {
    const refund = refunds.get(refundId);
    if (!refund) throw new Error(`No such refund: '${refundId}'`);
    const open = refund.status === 'pending' || refund.status === 'requires_action' || (refund.status === 'succeeded' && status === 'failed');
    if (!open) throw new Error(`Refund ${refundId} is ${refund.status}: it cannot become ${status}`);
    const previous = { status: refund.status };
    cause = { id: null, idempotency_key: null };
    Object.assign(refund, { status, ...(status === 'failed' ? { failure_reason: 'expired_or_canceled_card' } : {}) });
    if (status === 'failed') refundCharge(charges.get(refund.charge), -refund.amount);
    emit('refund.updated', refund, previous);
    if (status === 'failed') emit('refund.failed', refund);
    return JSON.parse(JSON.stringify(refund));
  }

  const refundView = (refund: any, expand: string[]) => ({ ...refund, charge: expand.includes('charge') || expand.includes('data.charge') ? charges.get(refund.charge) : refund.charge });

  /** The operation itself, once the request passed the checks (and was not an idempotent replay). */
  function route(method: string, path: string, p: Params, knobs?: Behaviour): { status: number; body: unknown } {
    const expand: string[] = Array.isArray(p.expand) ? p.expand : [];
    if (method === 'POST' && path === '/v1/payment_intents') {
      const made = createIntent(p);
      return made.status === 200 ? { status: 200, body: intentView(made.body, expand) } : made;
    }
    if (method === 'GET' && path === '/v1/payment_intents/search') {
      const match = /^metadata\['([^']+)'\]:'([^']*)'$/.exec(String(p.query ?? '').trim());
      if (!match) return stripeError(400, { type: 'invalid_request_error', code: 'parameter_invalid', param: 'query', message: 'The double understands metadata[\'key\']:\'value\' queries only.' });
      const matches = (pi: any) => pi.metadata?.[match[1]] === match[2];
      const found = knobs?.search_lists_others ? [...[...intents.values()].filter((pi) => !matches(pi)), ...[...intents.values()].filter(matches)] : [...intents.values()].filter(matches);
      const data = found.map((pi) => intentView(pi, expand.map((e) => e.replace(/^data\./, ''))));
      return { status: 200, body: { object: 'search_result', data, has_more: false, next_page: null, url: '/v1/payment_intents/search' } };
    }
    if (method === 'POST' && path === '/v1/refunds') {
      const made = createRefund(p, knobs?.refund_status);
      return made.status === 200 ? { status: 200, body: refundView(made.body, expand) } : made;
    }
    if (method === 'GET' && path === '/v1/refunds') {
      const data = [...refunds.values()].filter((r) => !p.payment_intent || r.payment_intent === p.payment_intent).reverse().map((r) => refundView(r, expand));
      return { status: 200, body: { object: 'list', data, has_more: false, url: '/v1/refunds' } };
    }
    const m = /^\/v1\/payment_intents\/([^/]+)(?:\/(capture|cancel))?$/.exec(path);
    if (m) {
      const pi = intents.get(m[1]);
      if (!pi) return stripeError(404, { type: 'invalid_request_error', code: 'resource_missing', param: 'intent', message: `No such payment_intent: '${m[1]}'` });
      if (method === 'GET' && !m[2]) return { status: 200, body: intentView(pi, expand) };
      if (method === 'POST' && m[2] === 'capture') return capture(pi, p);
      if (method === 'POST' && m[2] === 'cancel') return cancel(pi);
    }
    const disputed = disputes.route(method, path, p, cause.idempotency_key ?? undefined);
    if (disputed) return disputed;
    return stripeError(404, { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path}).` });
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://double');
    const method = req.method ?? 'GET';
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const requestId = id('req');
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': requestId });
      res.end(JSON.stringify(body));
    };

    // The knobs, the inspection endpoint and the issuer's challenge page (not Stripe's API).
    if (serveChallenge(method, url.pathname, text, res, challengeOf)) return;
    if (url.pathname === '/__double/behaviour' && method === 'POST') {
      behaviour = JSON.parse(text || '{}');
      remaining = behaviour?.times ?? 1;
      return answer(200, { ok: true });
    }
    if (url.pathname === '/__double/dispute-timing' && method === 'POST') {
      disputes.setTiming(JSON.parse(text || '{}'));
      return answer(200, { ok: true });
    }
    if (url.pathname === '/__double/state') return answer(200, double.state());

    const idempotencyKey = req.headers['idempotency-key'] as string | undefined;
    requests.push({ method, path: url.pathname, ...(idempotencyKey ? { idempotency_key: idempotencyKey } : {}) });
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!auth) return answer(401, { error: { type: 'invalid_request_error', message: 'You did not provide an API key.' } });
    if (!/^sk_test_[A-Za-z0-9_]+$/.test(auth)) return answer(401, { error: { type: 'invalid_request_error', message: `Invalid API Key provided: ${auth.slice(0, 8)}****` } });
    let params: Params;
    if (method === 'POST') {
      const type = req.headers['content-type'] ?? '';
      if (!type.startsWith('application/x-www-form-urlencoded')) {
        return answer(400, { error: { type: 'invalid_request_error', message: 'Invalid request: bodies must be application/x-www-form-urlencoded.' } });
      }
      params = parseForm(text);
    } else {
      params = parseForm(url.search.slice(1));
    }

    const matching = behaviour?.match ?? (behaviour?.refund_status ? 'POST /v1/refunds' : 'POST /v1/payment_intents');
    const applies = behaviour && remaining > 0 && `${method} ${url.pathname}`.startsWith(matching);
    const knobs = applies ? behaviour! : undefined;
    if (applies) remaining -= 1;

    let reply: { status: number; body: unknown };
    const storeKey = idempotencyKey && method === 'POST' ? `${auth} ${idempotencyKey}` : undefined;
    const fingerprint = JSON.stringify([method, url.pathname, params]);
    const stored = storeKey ? idempotency.get(storeKey) : undefined;
    if (stored && stored.fingerprint !== fingerprint) {
      reply = stripeError(400, {
        type: 'idempotency_error',
        message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idempotencyKey}' if you meant to execute a different request.`,
      });
    } else if (stored) {
      reply = { status: stored.status, body: stored.body };
      res.setHeader('idempotent-replayed', 'true');
    } else {
      const before = intents.size;
      cause = { id: requestId, idempotency_key: idempotencyKey ?? null };
      reply = route(method, url.pathname, params, knobs);
      if (idempotencyKey && intents.size > before) createsByKey[idempotencyKey] = (createsByKey[idempotencyKey] ?? 0) + 1;
      if (knobs?.fail_with_500) reply = stripeError(500, { type: 'api_error', message: 'An unknown error occurred' });
      // Stripe stores every answer of an endpoint that started executing, 5xx included (not 400s from validation, but the double keeps it simple: everything but 401).
      if (storeKey) idempotency.set(storeKey, { fingerprint, status: reply.status, body: JSON.parse(JSON.stringify(reply.body)) });
    }
    if (knobs && reply.status < 300) reply = { status: reply.status, body: tampered(reply.body, knobs) };
    if (knobs?.latency_ms) await new Promise((resolve) => setTimeout(resolve, knobs.latency_ms));
    if (knobs?.drop_connection) {
      req.socket.destroy();
      return;
    }
    if (!res.destroyed) answer(reply.status, reply.body);
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { type: 'api_error', message: String(err) } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const double: StripeDouble = {
    url: `http://127.0.0.1:${port}`,
    state: () => ({
      intents: [...intents.values()], refunds: [...refunds.values()], events: [...events], creates_by_key: { ...createsByKey }, requests: [...requests],
      stored_credentials: storedCredentials.map((use) => ({ ...use })), disputes: disputes.list(), dispute_requests: disputes.requests(),
    }),
    behave(b: Behaviour) {
      behaviour = b;
      remaining = b.times ?? 1;
    },
    disputeTiming: (timing) => disputes.setTiming(timing),
    setWebhook(target) {
      endpoint = target ? { ...target } : null;
    },
    holdWebhooks(on) {
      holding = on;
    },
    pendingWebhooks: () => [...held],
    releaseWebhooks({ duplicate = false, reverse = false } = {}) {
      const batch = held.splice(0, held.length);
      if (reverse) batch.reverse();
      return send(duplicate ? batch.flatMap((event) => [event, event]) : batch);
    },
    webhooksSent: () => deliveries.map((delivery) => ({ ...delivery })),
    async webhooksIdle() {
      while (running.size > 0) await Promise.allSettled([...running]);
    },
    settleRefund,
    async close() {
      closed = true;
      closing.abort();
      for (const [timer, wake] of sleeping) {
        clearTimeout(timer);
        wake();
      }
      sleeping.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return double;
}
