import { createHash, timingSafeEqual } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import type Koa from 'koa';
import { findCheckoutSession } from '../../db/checkout-sessions';
import type { Environment } from '../../db/environments';
import { eraseSingleUseCards, wipeCvc } from '../../db/payment-methods';
import { findPayment, type AnsweredPayment, type PaymentRow } from '../../db/payments';
import { confirmPayment } from '../../workflows/payments/client';
import { allows, MAX_FAILED_CONFIRMATIONS, type CommandResult } from '../../contracts/payments';
import type { RequestContext } from '../../contracts/temporal';
import type { Principal } from '../auth/authenticate';
import type { ApiDeps } from '../deps';
import { ApiError, withArticle } from '../errors';
import type { HeldDeclines } from '../middleware/decline-limits';
import { commandOptions } from '../middleware/idempotency';
import { workflowContext } from '../route';
import { Id, Obj } from '../../resources/schemas';
import { CardBody, cardForConfirm, unusablePaymentMethod, type ConfirmCard } from './payment-cards';
import { checkReturnUrl, Installments, ReturnUrl, Routing } from './payment-fields';
import { checkReturnUrlHost, sealedConfirm } from './payment-seals';

// A payment's confirm with a card, shared by everyone who confirms: the confirm route (a secret key, a
// user, or a publishable key) and the hosted checkout page. Client-side callers (a publishable key, the
// hosted page and the card fields it serves) are counted against decline budgets, give no routing hints,
// save no card unless their checkout session allows it, and are shown a generic decline by their callers
// (resources/payments.ts serializeCheckoutPayment). Why: see
// docs/security.md#21-a-publishable-key-is-no-card-testing-oracle.

export const ConfirmBody = Obj({
  client_secret: Type.Optional(Type.String({
    minLength: 1, maxLength: 200,
    description: 'The payment\'s client_secret: required with a publishable key; checked when a secret key gives it. A wrong one is the 404 of an unknown payment.',
  })),
  payment_method_id: Type.Optional(Id('pm')),
  payment_method: Type.Optional(CardBody),
  save_payment_method: Type.Optional(Type.Boolean()),
  installments: Type.Optional(Installments),
  routing: Type.Optional(Routing),
  return_url: Type.Optional(ReturnUrl),
});

export type ConfirmBodyValue = Static<typeof ConfirmBody>;

/**
 * Who confirms. `publishable`: a publishable key (the card fields included); `hosted_page`: the hosted
 * checkout page of a session, whose unguessable id is its capability; `server`: a secret key or a user.
 */
export type ConfirmCaller =
  | { kind: 'publishable'; keyId: string }
  | { kind: 'hosted_page'; sessionId: string }
  | { kind: 'server'; principal: Principal };

export interface ConfirmRequest {
  env: Environment;
  /**
   * The payment as findPayment or readPayment read it (every column): its client_secret, which both read,
   * is needed only to check one given (a payment without one matches none).
   */
  payment: (PaymentRow | AnsweredPayment) & { client_secret?: string };
  body: ConfirmBodyValue;
  caller: ConfirmCaller;
  ctx: Koa.Context;
}

/** How a confirm went: the payment's row after it, and the walk's outcome (each caller presents them its own way). */
export interface Confirmed { payment: PaymentRow | AnsweredPayment; outcome: CommandResult['outcome'] }

/** The caller a route's principal is: its publishable key, or the merchant's own server (a secret key or a user). */
export function callerOf(principal: Principal): ConfirmCaller {
  return principal.kind === 'api_key' && principal.keyType === 'PUBLISHABLE' ? { kind: 'publishable', keyId: principal.keyId } : { kind: 'server', principal };
}

/**
 * `given` must be the payment's client_secret when `required` (a publishable key), and when given at all:
 * otherwise the same 404 as an unknown payment, so a guessed id and a wrong secret look alike. Compared in
 * constant time (digests of both, so that their lengths tell nothing either).
 */
export function requireClientSecret(payment: { client_secret?: string }, given: string | undefined, required: boolean): void {
  if (given === undefined && !required) return;
  const digest = (value: string) => createHash('sha256').update(value).digest();
  const stored = payment.client_secret;
  if (given === undefined || !stored || !timingSafeEqual(digest(stored), digest(given))) throw ApiError.notFound('payment');
}

/**
 * Whether a client-side confirm may save its card to the payment's customer: only a payment of a checkout
 * session created with `save_payment_method: true` (docs/checkout.md). The session must be this very
 * payment's: a payment's `checkout_session_id` alone is whatever its create said.
 */
export async function sessionAllowsSaving(deps: Pick<ApiDeps, 'db'>, env: Environment, payment: Pick<PaymentRow, 'id' | 'account_id' | 'checkout_session_id'>): Promise<boolean> {
  if (!payment.checkout_session_id) return false;
  const session = await findCheckoutSession(deps.db, env, payment.checkout_session_id);
  return !!session && session.save_payment_method && session.payment_id === payment.id && session.account_id === payment.account_id;
}

/** The Temporal-side context of a confirm: the caller's actor, never any secret of it. */
function contextOf(ctx: Koa.Context, caller: ConfirmCaller): RequestContext {
  if (caller.kind === 'server') return workflowContext(ctx, caller.principal);
  const ids = { requestId: ctx.state.requestId as string | undefined, traceId: ctx.state.traceId as string | undefined, spanId: ctx.state.spanId as string | undefined };
  return caller.kind === 'publishable'
    ? { ...ids, actor: { type: 'api_key', id: caller.keyId, apiKeyId: caller.keyId } }
    : { ...ids, actor: { type: 'system', id: `hosted_page:${caller.sessionId}` } };
}

/** What is refused before anything is vaulted or counted: the request's shape, the secret, the payment's state. */
async function refuseBeforeCard(deps: ApiDeps, { env, payment, body, caller }: ConfirmRequest): Promise<void> {
  const client = caller.kind !== 'server';
  // A checkout may pay, not choose who processes the payment: routing hints need a secret key or a user.
  if (client && body.routing !== undefined) {
    throw new ApiError('publishable_key_not_allowed', 'A publishable key cannot give routing hints.', { fields: ['body/routing'] });
  }
  if (!!body.payment_method_id === !!body.payment_method) {
    throw ApiError.validation([{ path: 'body', message: 'give exactly one of payment_method_id and payment_method' }]);
  }
  requireClientSecret(payment, body.client_secret, caller.kind === 'publishable');
  // The hosted page's return_url is its own page on PUBLIC_URL, not a merchant's host.
  if (caller.kind !== 'hosted_page') {
    checkReturnUrl(body.return_url, env);
    await checkReturnUrlHost(deps, payment.account_id, body.return_url);
  }
  // The workflow's validator says the same against its own state; refused here before a card is vaulted.
  if (!allows('confirm', payment.status)) {
    throw new ApiError('invalid_state', `${withArticle(payment.status)} payment cannot be confirmed.`, { status: payment.status });
  }
  if (payment.failed_confirmations >= MAX_FAILED_CONFIRMATIONS) {
    throw new ApiError('too_many_attempts', undefined, { status: payment.status, failed_confirmations: payment.failed_confirmations });
  }
  if (client && body.save_payment_method && !(await sessionAllowsSaving(deps, env, payment))) {
    throw new ApiError('publishable_key_not_allowed', 'A publishable key saves a card only through a checkout session created with save_payment_method.', { fields: ['body/save_payment_method'] });
  }
}

/**
 * Takes back what a confirm the workflow never took wrote: a single-use card it refused (busy, no longer
 * confirmable, too many attempts) is erased; a card saved now keeps no CVC, whatever went wrong.
 */
async function takeBack(deps: ApiDeps, env: Environment, paymentId: string, card: ConfirmCard, err: unknown): Promise<void> {
  const refused = err instanceof ApiError && (err.reason === 'invalid_state' || err.reason === 'too_many_attempts');
  if (card.vaulted && refused) await eraseSingleUseCards(deps.db, env, paymentId, card.vaulted);
  if (card.savedNow) await wipeCvc(deps.db, env, card.savedNow);
}

/** Sends the sealed confirm to the payment's workflow: only the card's pm_ id travels. */
async function sendConfirm(deps: ApiDeps, { env, payment, body, caller, ctx }: ConfirmRequest, card: ConfirmCard): Promise<CommandResult> {
  const statusOf = async (paymentId: string) => (await findPayment(deps.db, env, paymentId))?.status;
  try {
    return await confirmPayment(await deps.temporal(), payment.id, sealedConfirm(deps, payment.id, {
      paymentMethodId: card.paymentMethodId, installments: body.installments, routing: body.routing, context: contextOf(ctx, caller),
      ...(body.return_url ? { returnUrl: body.return_url } : {}),
    }), statusOf, commandOptions(ctx));
  } catch (err) {
    await takeBack(deps, env, payment.id, card, err);
    throw err;
  }
}

/**
 * Confirms `payment` with the card the body gives (a saved one of its customer, its own single-use one,
 * or a raw card, vaulted here): refused before anything is written when the request, its client_secret or
 * the payment's state do not allow it; a client-side confirm past a decline budget is 429
 * `too_many_declines` before its card is vaulted or any processor called. Answers the payment's row as the
 * walk left it (or PROCESSING after 10 s) with its outcome; `no_eligible_provider` is thrown (422).
 */
export async function confirmWithCard(deps: ApiDeps, request: ConfirmRequest): Promise<Confirmed> {
  const { env, payment, body, caller, ctx } = request;
  await refuseBeforeCard(deps, request);
  let held: HeldDeclines | undefined;
  let declined = false;
  try {
    const card = await cardForConfirm(deps, env, {
      paymentId: payment.id, accountId: payment.account_id, customerId: payment.customer_id ?? null,
    }, body, caller.kind === 'server' ? undefined : async (fingerprint) => {
      held = await deps.declineLimits.hold({
        accountId: payment.account_id, fingerprint, ip: ctx.ip, ...(caller.kind === 'publishable' ? { publishableKeyId: caller.keyId } : {}),
      });
    });
    const result = await sendConfirm(deps, request, card);
    const row = await findPayment(deps.db, env, payment.id);
    if (result.outcome === 'no_eligible_provider') {
      // The card was deleted or used up between the check above and the plan.
      if (row?.last_error?.code === 'payment_method_unavailable') throw unusablePaymentMethod(body.payment_method_id ? 'body/payment_method_id' : 'body/payment_method');
      throw new ApiError('no_eligible_provider', undefined, { status: 'FAILED', payment_id: payment.id });
    }
    // A decline is a walk the processor ended FAILED, as the answer says it.
    declined = result.outcome === 'failed' && row?.status === 'FAILED';
    return { payment: row ?? payment, outcome: result.outcome };
  } finally {
    await held?.settle(declined);
  }
}
