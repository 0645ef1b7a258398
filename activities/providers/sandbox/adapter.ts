// The `sandbox` adapter: speaks the simulator's processor API over HTTP (undici) and normalizes every
// answer to a ProviderOutcome. The PAN goes into the authorize request body and nowhere else; a 3-D
// Secure authentication value (cavv) goes into it too when given, and is masked in every exchange record.

import { Agent, request } from 'undici';
import { guardAnswer, withReason, type Money } from '../answer-guard';
import { recordExchange as record, redactSecrets } from '../exchange';
import { errorCode, isObject, parseJson } from '../../../lib/providers/wire';
import {
  AuthorizeInput, AuthorizeOutput, CaptureInput, CaptureOutput, CompleteAuthenticationInput, CompleteAuthenticationOutput,
  GetStatusInput, GetStatusOutput, OperationOutput, ProviderAdapter, ProviderCredentials, ProviderExchange, ProviderOperation, ProviderOutcome, RecurringAuthorization,
  RefundInput, RefundOutput, ThreeDSecureRequest, TransportError, UnknownOutcome, VoidInput, VoidOutput,
} from '../types';
import { SANDBOX_CATALOGUE, SandboxCredentials } from '../../../lib/providers/sandbox/credentials';
import { authenticationOf, chargeOutcome, outcomeOf, redactAuthenticationValue } from '../../../lib/providers/sandbox/outcomes';
import { sandboxDisputeActions } from './disputes';

export interface SandboxAdapterOptions {
  /** Where the simulator listens, e.g. http://127.0.0.1:4010. */
  baseUrl: string;
  /**
   * How long to wait for an answer once a request is sent; past it the outcome is `unknown`.
   * undici checks it on a coarse clock, so it fires up to about a second late.
   */
  timeoutMs?: number;
  /** How long to wait for a connection; past it nothing was sent, so it is a `transport_error`. */
  connectTimeoutMs?: number;
}

export interface SandboxAdapter extends ProviderAdapter {
  completeAuthentication(input: CompleteAuthenticationInput): Promise<CompleteAuthenticationOutput>;
  /** Closes pooled connections (tests, shutdown). */
  close(): Promise<void>;
}

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 2_000;

// Errors raised before the request could reach the simulator: safe to retry or to try another provider.
// Anything else after sending (timeouts, resets) leaves the outcome unknown.
const NOT_DELIVERED = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_INVALID_ARG',
]);

interface Call {
  operation: ProviderOperation;
  idempotencyKey: string;
  method: 'GET' | 'POST';
  path: string;
  credentials: ProviderCredentials;
  body?: Record<string, unknown>;
  /** What the exchange record shows of the body: an allow-list, never the card. */
  summary?: Record<string, unknown>;
}

type Reply =
  | { answered: true; status: number; body: unknown; exchange: Omit<ProviderExchange, 'outcome'> }
  | { answered: false; failure: TransportError | UnknownOutcome; exchange: Omit<ProviderExchange, 'outcome'> };

export function createSandboxAdapter(options: SandboxAdapterOptions): SandboxAdapter {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const agent = new Agent({
    connect: { timeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });

  async function send(call: Call): Promise<Reply> {
    const credentials = call.credentials as SandboxCredentials;
    const headers: Record<string, string> = {
      authorization: `Bearer ${credentials.api_key ?? ''}`,
      accept: 'application/json',
    };
    if (call.method === 'POST') {
      headers['content-type'] = 'application/json';
      headers['idempotency-key'] = call.idempotencyKey;
    }
    if (credentials.simulate) headers['x-simulate'] = JSON.stringify(credentials.simulate);

    const startedAt = new Date();
    const started = performance.now();
    const exchange = (): Omit<ProviderExchange, 'outcome'> => ({
      operation: call.operation,
      idempotency_key: call.idempotencyKey,
      request: { method: call.method, path: call.path, ...(call.summary ? { body: call.summary } : {}) },
      started_at: startedAt.toISOString(),
      duration_ms: Math.round(performance.now() - started),
    });

    try {
      const response = await request(`${baseUrl}${call.path}`, {
        method: call.method,
        headers,
        body: call.body ? JSON.stringify(call.body) : undefined,
        dispatcher: agent,
      });
      const text = await response.body.text();
      const body = parseJson(text);
      const recorded = redactAuthenticationValue(redactSecrets(body));
      return { answered: true, status: response.statusCode, body, exchange: { ...exchange(), response: { status: response.statusCode, body: recorded } } };
    } catch (err) {
      const code = errorCode(err);
      const error = `${code ?? 'error'}: ${err instanceof Error ? err.message : String(err)}`;
      const failure: TransportError | UnknownOutcome = code && NOT_DELIVERED.has(code) ? { kind: 'transport_error', error } : { kind: 'unknown', error };
      return { answered: false, failure, exchange: { ...exchange(), error } };
    }
  }

  /**
   * An authorize refused because its key already names another request (`idempotency_key_reused`) is
   * our own retry, sent with a body that changed: the card's CVC is wiped once the processor has
   * answered, so an attempt retried after that answer was lost (its outcome's commit failed, its worker
   * died) goes out without it. The first request may have been approved: unknown, to be reconciled by
   * the key, never a decline.
   */
  function authorizeKeyTaken(call: Call, outcome: ProviderOutcome): ProviderOutcome {
    if (call.operation !== 'authorize' || outcome.kind !== 'hard_decline' || outcome.declineCode !== 'idempotency_key_reused') return outcome;
    return { kind: 'unknown', error: `the idempotency key ${call.idempotencyKey} already names an authorization${outcome.message ? `: ${outcome.message}` : ''}` };
  }

  /** One call, its answer read as an outcome and held to what was asked (`asked`: the money, and the charge it is on). */
  async function operate(call: Call, asked: Asked): Promise<OperationOutput> {
    const reply = await send(call);
    const read = reply.answered ? heldTo(asked, outcomeOf(reply.status, reply.body), reply.body) : reply.failure;
    const outcome = authorizeKeyTaken(call, read);
    return { outcome, exchange: record(withReason(reply.exchange, outcome), outcome) };
  }

  return {
    identifier: SANDBOX_CATALOGUE.identifier,
    capabilities: SANDBOX_CATALOGUE.capabilities,
    defaultMethods: SANDBOX_CATALOGUE.defaultMethods,
    credentialsSchema: SANDBOX_CATALOGUE.credentialsSchema,

    authorize(input: AuthorizeInput): Promise<AuthorizeOutput> {
      const { card } = input;
      return operate({
        operation: 'authorize',
        idempotencyKey: input.idempotencyKey,
        method: 'POST',
        path: '/v1/charges',
        credentials: input.credentials,
        body: {
          amount: input.amount,
          currency: input.currency,
          installments: input.installments,
          card: { number: card.number, exp_month: card.exp_month, exp_year: card.exp_year, ...(card.cvc ? { cvc: card.cvc } : {}) },
          ...(input.metadata ? { metadata: input.metadata } : {}),
          // Captured with the approval (at the end of a challenge too), as Stripe and Adyen are asked to:
          // no second call, and no window in which the payment stands authorized awaiting its capture.
          ...(input.capture ? { capture: true } : {}),
          ...(input.returnUrl ? { return_url: input.returnUrl } : {}),
          ...(input.notificationUrl ? { notification_url: input.notificationUrl } : {}),
          ...(input.threeDSecure ? { three_d_secure: threeDSecureBody(input.threeDSecure) } : {}),
          ...(input.recurring ? { stored_credential: storedCredentialBody(input.recurring) } : {}),
        },
        summary: {
          amount: input.amount, currency: input.currency, installments: input.installments, card: { last4: card.number.slice(-4) },
          ...(input.capture ? { capture: true } : {}),
          ...(input.returnUrl ? { return_url: input.returnUrl } : {}),
          ...(input.notificationUrl ? { notification_url: input.notificationUrl } : {}),
          // Whether external authentication data was sent, never the data.
          ...(input.threeDSecure ? { three_d_secure: { requested: input.threeDSecure.requested === true, external: input.threeDSecure.external !== undefined } } : {}),
          // The flags, and whether a network transaction id was sent.
          ...(input.recurring ? { stored_credential: { ...storedCredentialBody(input.recurring), network_transaction_id: input.recurring.networkTransactionId !== undefined } } : {}),
        },
      }, { money: { amount: input.amount, currency: input.currency }, moved: 'authorized', madeUnder: input.idempotencyKey });
    },

    /**
     * The charge as it is now (GET /v1/charges/:id): still waiting, or the challenge's end. Anything but
     * a readable charge is `unknown` — the cardholder may have authenticated and the charge be approved,
     * so nothing here may send the payment to another provider; the look-up by idempotency key settles it.
     * The simulator appends `sim_charge` to the return URL; the charge is read by providerReference alone.
     */
    async completeAuthentication(input: CompleteAuthenticationInput): Promise<CompleteAuthenticationOutput> {
      const reply = await send({
        operation: 'authenticate', idempotencyKey: input.idempotencyKey, method: 'GET',
        path: `/v1/charges/${encodeURIComponent(input.providerReference)}`, credentials: input.credentials,
      });
      if (!reply.answered || reply.status !== 200) {
        const outcome: UnknownOutcome = { kind: 'unknown', error: reply.answered ? `the charge look-up answered HTTP ${reply.status}` : reply.failure.error };
        return { outcome, exchange: record(reply.exchange, outcome) };
      }
      const outcome = heldTo({ money: { amount: input.amount }, moved: 'authorized', chargeId: input.providerReference }, chargeOutcome(reply.body).outcome, reply.body);
      const authentication = authenticationOf(reply.body);
      return { outcome, exchange: record(withReason(reply.exchange, outcome), outcome), ...(authentication && outcome.kind !== 'unknown' ? { authentication } : {}) };
    },

    capture(input: CaptureInput): Promise<CaptureOutput> {
      const body = input.amount === undefined ? {} : { amount: input.amount };
      return operate(
        { operation: 'capture', idempotencyKey: input.idempotencyKey, method: 'POST', path: `/v1/charges/${encodeURIComponent(input.providerReference)}/capture`, credentials: input.credentials, body, summary: body },
        { money: { amount: input.amount, currency: input.currency }, moved: 'captured', chargeId: input.providerReference },
      );
    },

    void(input: VoidInput): Promise<VoidOutput> {
      return operate(
        { operation: 'void', idempotencyKey: input.idempotencyKey, method: 'POST', path: `/v1/charges/${encodeURIComponent(input.providerReference)}/void`, credentials: input.credentials, body: {} },
        { money: {}, moved: 'nothing', chargeId: input.providerReference },
      );
    },

    refund(input: RefundInput): Promise<RefundOutput> {
      const body = { amount: input.amount };
      return operate(
        { operation: 'refund', idempotencyKey: input.idempotencyKey, method: 'POST', path: `/v1/charges/${encodeURIComponent(input.providerReference)}/refunds`, credentials: input.credentials, body, summary: body },
        { money: { amount: input.amount, currency: input.currency }, moved: 'refunded', chargeId: input.providerReference },
      );
    },

    async getStatus(input: GetStatusInput): Promise<GetStatusOutput> {
      const reply = await send({ operation: 'get_status', idempotencyKey: input.idempotencyKey, method: 'GET', path: `/v1/operations/${encodeURIComponent(input.idempotencyKey)}`, credentials: input.credentials });
      if (!reply.answered) return { lookup: 'failed', error: reply.failure.error, exchange: record(reply.exchange, reply.failure) };
      if (reply.status === 404) return { lookup: 'not_found', exchange: { ...reply.exchange, outcome: 'not_found' } };
      const found = asOperationRecord(reply.body);
      if (reply.status !== 200 || !found) {
        const outcome = outcomeOf(reply.status, reply.body);
        return { lookup: 'failed', error: `status lookup answered HTTP ${reply.status}`, exchange: record(reply.exchange, outcome) };
      }
      // Only the record of this key (and, for an authorize, the charge made under it) settles anything.
      const other = otherOperation(found, input.idempotencyKey);
      if (other) {
        const outcome: UnknownOutcome = { kind: 'unknown', error: `answer does not match the request: ${other}` };
        return { lookup: 'failed', error: outcome.error, exchange: record({ ...reply.exchange, error: outcome.error }, outcome) };
      }
      const outcome = outcomeOf(found.status_code, found.response, found.charge);
      return { lookup: 'found', operation: found.operation, outcome, exchange: record(reply.exchange, outcome) };
    },

    // Answering a dispute: evidence with submit, or acceptance (./disputes).
    ...sandboxDisputeActions(send),

    close: () => agent.close(),
  };
}

// ---------------------------------------------------------------------------------------------------
// Reading the simulator's answers (the outcomes themselves: ./outcomes)

/** The simulator's three_d_secure request field: snake_case, as its API spells it. */
function threeDSecureBody(request: ThreeDSecureRequest): Record<string, unknown> {
  const { requested, external } = request;
  return {
    ...(requested !== undefined ? { requested } : {}),
    ...(external ? { external: { version: external.version, eci: external.eci, cavv: external.cavv, ds_transaction_id: external.dsTransactionId } } : {}),
  };
}

/** The simulator's stored_credential request field (docs/sandbox-processor.md#stored-credentials). */
function storedCredentialBody(recurring: RecurringAuthorization): Record<string, unknown> {
  const { model, initiator, networkTransactionId } = recurring;
  return { model, initiator, ...(networkTransactionId ? { network_transaction_id: networkTransactionId } : {}) };
}

/** What an operation was asked: the money (held to the answer's), and the charge it is on or the key that made it. */
interface Asked {
  money: Money;
  /** Which of the answer's amounts the operation moved: the charge's authorized, captured, or the refund's. */
  moved: 'authorized' | 'captured' | 'refunded' | 'nothing';
  /** The charge a capture, void, refund or authentication is on (its id at the simulator). */
  chargeId?: string;
  /** The key an authorize made its charge under (the simulator shows it as the charge's idempotency_key). */
  madeUnder?: string;
}

/**
 * An outcome read from a 2xx answer, held to the request: the charge or refund it shows must be the one
 * asked about, and the amount it moved and its currency the ones asked for.
 */
function heldTo(asked: Asked, outcome: ProviderOutcome, body: unknown): ProviderOutcome {
  const refund = isObject(body) && body.object === 'refund' ? body : undefined;
  const shown = refund ? refund.charge : body;
  const charge = isObject(shown) ? shown : {};
  // Before its approval (a challenge) a charge has authorized nothing yet: its amount is what it will authorize.
  const amount = {
    authorized: outcome.kind === 'approved' ? charge.authorized_amount : charge.amount,
    captured: charge.captured_amount,
    refunded: refund?.amount,
    nothing: undefined,
  }[asked.moved];
  const answered: Money = {
    ...(typeof amount === 'number' ? { amount } : {}),
    ...(typeof charge.currency === 'string' ? { currency: charge.currency } : {}),
  };
  return guardAnswer(outcome, asked.money, answered, otherCharge(asked, refund ? refund.charge_id : charge.id, charge.idempotency_key));
}

function otherCharge(asked: Asked, chargeId: unknown, madeUnder: unknown): string | undefined {
  if (asked.chargeId !== undefined && chargeId !== asked.chargeId) return `charge ${String(chargeId)} answered, ${asked.chargeId} asked`;
  if (asked.madeUnder !== undefined && madeUnder !== undefined && madeUnder !== asked.madeUnder) return `charge made under key ${String(madeUnder)} answered, ${asked.madeUnder} asked`;
  return undefined;
}

/** Why a status record is not the one of this key (another key's, or an authorize whose charge was made under another), or undefined. */
function otherOperation(found: NonNullable<ReturnType<typeof asOperationRecord>>, key: string): string | undefined {
  if (found.idempotency_key !== key) return `the record of key ${String(found.idempotency_key)} answered, ${key} asked`;
  const madeUnder = isObject(found.charge) ? found.charge.idempotency_key : undefined;
  if (found.operation === 'authorize' && madeUnder !== undefined && madeUnder !== key) return `a charge made under key ${String(madeUnder)} answered, ${key} asked`;
  return undefined;
}

function asOperationRecord(value: unknown):
  { idempotency_key?: unknown; operation: 'authorize' | 'capture' | 'void' | 'refund'; status_code: number; response: unknown; charge: unknown } | undefined {
  if (!isObject(value) || typeof value.status_code !== 'number') return undefined;
  if (!['authorize', 'capture', 'void', 'refund'].includes(value.operation as string)) return undefined;
  return value as ReturnType<typeof asOperationRecord>;
}
