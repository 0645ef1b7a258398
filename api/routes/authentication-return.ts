import type Koa from 'koa';
import coBody from 'co-body';
import { setTimeout as delay } from 'node:timers/promises';
import { writeReturnParamsOnce } from '../../db/authentication-returns';
import type { Environment } from '../../db/environments';
import { findCharge, findPayment, type ChargeRow, type PaymentRow } from '../../db/payments';
import { looksLikeId } from '../../lib/ids';
import { logger } from '../../lib/logger';
import { CONFIRM_WAIT_MS, PaymentWorkflowClosedError, returnFromAuthentication } from '../../workflows/payments/client';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { authenticationReturnLimits } from '../middleware/rate-limit';
import { returnUrlStillAllowed } from './payment-seals';
import { isCheckoutPageUrl } from '../checkout-page/checkout';

const PATH = /^\/v1\/payments\/([^/]+)\/authentication-return$/;
const ENVIRONMENTS: Environment[] = ['production', 'sandbox'];
const MAX_PARAMS = 20;
const MAX_PARAM_LENGTH = 8192;
/** How often the payment's row is read while its walk completes the step after the return. */
const SETTLE_POLL_MS = 200;

/**
 * GET|POST /v1/payments/{id}/authentication-return?charge={ch}: where a processor sends the customer's
 * browser back after 3-D Secure (docs/authentication.md). No credentials (it is the customer's browser):
 * what it can do is ask the processor how the authentication ended, which the processor answers, so a
 * forged return changes nothing. Only the first return of the payment's latest charge counts: its
 * parameters (Adyen's redirectResult, …) are sealed on the charge once, for the activity that completes
 * the step (never in workflow history; secrets such as Stripe's client secret dropped), the workflow is
 * told if it waits on that charge, and once the step is done (or 10 s have passed) the browser goes to
 * the merchant's return_url — if its host is still one the account allows (docs/security.md §17). Any
 * other hit (a refresh, a second return, an older charge) sees a page saying how the payment stands,
 * never a redirect. Rate-limited per source IP and per payment before any of that.
 */
export function authenticationReturn(deps: ApiDeps): Koa.Middleware {
  const limits = authenticationReturnLimits(deps.config.authenticationReturnLimit);
  // Every other request passes straight through, without a promise of this middleware's own.
  return (ctx, next) => {
    const match = ctx.method === 'GET' || ctx.method === 'POST' ? PATH.exec(ctx.path) : null;
    return match ? limited(ctx, match[1]) : next();
  };

  async function limited(ctx: Koa.Context, encodedPaymentId: string): Promise<void> {
    ctx.state.routeTemplate = '/v1/payments/:id/authentication-return';
    const paymentId = decoded(encodedPaymentId);
    try {
      await limits.consume(ctx.ip, paymentId.slice(0, 64));
    } catch (err) {
      if (!(err instanceof ApiError) || err.reason !== 'rate_limited') throw err;
      ctx.set(err.headers ?? {});
      page(ctx, 429, 'Too many requests', 'Please wait a moment, then reload this page.');
      return;
    }
    await complete(ctx, paymentId);
  }

  async function complete(ctx: Koa.Context, paymentId: string): Promise<void> {
    const chargeId = typeof ctx.query.charge === 'string' ? ctx.query.charge : '';
    const found = looksLikeId(paymentId, 'pay') && looksLikeId(chargeId, 'ch') ? await findPaymentAnywhere(deps, paymentId) : undefined;
    const charge = found && await findCharge(deps.db, found.env, chargeId);
    if (!found || !charge || charge.payment_id !== paymentId) {
      page(ctx, 404, 'Payment not found', 'This link does not belong to a payment.');
      return;
    }
    const { env, payment } = found;
    // Only the first return of the payment's latest charge is redirected (its notification may have
    // completed it a moment before the browser came back); a refresh or an older charge sees the page.
    const first = await writeReturnParamsOnce(deps.db, env, chargeId, deps.vault.encryptJson(await returnParams(ctx)));
    if (!first) {
      statusPage(ctx, payment);
      return;
    }
    if (waitsOn(payment, charge)) await tellWorkflow(env, paymentId, chargeId);
    const settled = await settledRow(env, paymentId) ?? payment;
    // The hosted checkout page is Switchboard's own, whatever hosts the account allows.
    if (settled.return_url && (isCheckoutPageUrl(deps.config.publicUrl, settled.return_url) || await returnUrlStillAllowed(deps, settled.account_id, settled.return_url))) {
      const target = new URL(settled.return_url);
      target.searchParams.set('payment_intent', settled.id);
      target.searchParams.set('redirect_status', redirectStatus(settled));
      ctx.status = 303;
      ctx.redirect(target.toString());
      return;
    }
    statusPage(ctx, settled);
  }

  /** Tells the payment's workflow the customer is back; its validator refuses a charge it no longer waits on. */
  async function tellWorkflow(env: Environment, paymentId: string, chargeId: string): Promise<void> {
    try {
      await returnFromAuthentication(await deps.temporal(), paymentId, chargeId, async (id) => (await findPayment(deps.db, env, id))?.status);
    } catch (err) {
      // The processor's notification completes it too: the customer is sent on whatever happened here.
      if (!(err instanceof PaymentWorkflowClosedError)) logger.warn({ payment_id: paymentId, charge_id: chargeId, err: String(err) }, 'authentication return not delivered');
    }
  }

  /** The payment once the walk has left REQUIRES_ACTION and PROCESSING, or as it stands after CONFIRM_WAIT_MS. */
  async function settledRow(env: Environment, paymentId: string): Promise<PaymentRow | undefined> {
    const until = Date.now() + CONFIRM_WAIT_MS;
    for (;;) {
      const row = await findPayment(deps.db, env, paymentId);
      if (!row || (row.status !== 'REQUIRES_ACTION' && row.status !== 'PROCESSING') || Date.now() >= until) return row;
      await delay(SETTLE_POLL_MS);
    }
  }
}

/** Whether the payment waits on this charge's authentication (its row, and the charge's, say so). */
function waitsOn(payment: PaymentRow, charge: ChargeRow): boolean {
  return payment.status === 'REQUIRES_ACTION' && charge.status === 'REQUIRES_ACTION' && payment.next_action?.charge_id === charge.id;
}

/** A path segment's text; a malformed percent-encoding (`%`, `%C0`) names no payment, so it is the empty string. */
function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return '';
  }
}

async function findPaymentAnywhere(deps: ApiDeps, paymentId: string): Promise<{ payment: PaymentRow; env: Environment } | undefined> {
  for (const env of ENVIRONMENTS) {
    const payment = await findPayment(deps.db, env, paymentId);
    if (payment) return { payment, env };
  }
  return undefined;
}

/** The processor's return parameters (query and form), bounded, without our own and without secrets. */
async function returnParams(ctx: Koa.Context): Promise<Record<string, string>> {
  const form = ctx.method === 'POST' && ctx.is('application/x-www-form-urlencoded')
    ? await coBody.form(ctx, { limit: '64kb' }).catch(() => ({})) as Record<string, unknown>
    : {};
  const entries = [...Object.entries(ctx.query), ...Object.entries(form)]
    .filter((entry): entry is [string, string] => typeof entry[1] === 'string')
    .filter(([key, value]) => key !== 'charge' && !/secret/i.test(key) && value.length <= MAX_PARAM_LENGTH);
  return Object.fromEntries(entries.slice(0, MAX_PARAMS));
}

/** The neutral page: how the payment stands, and no redirect. */
function statusPage(ctx: Koa.Context, payment: PaymentRow): void {
  const status = redirectStatus(payment);
  const [title, text] = status === 'succeeded'
    ? ['Payment complete', 'Thank you: your payment is complete. You can close this window.']
    : status === 'failed'
      ? ['Payment not completed', 'The payment could not be completed. You can close this window and try again.']
      : ['Payment processing', 'Your payment is being processed. You can close this window.'];
  page(ctx, 200, title, text);
}

function redirectStatus(payment: PaymentRow): 'succeeded' | 'failed' | 'processing' {
  if (payment.status === 'SUCCEEDED' || payment.status === 'AUTHORIZED') return 'succeeded';
  if (payment.status === 'FAILED' || payment.status === 'CANCELED') return 'failed';
  return 'processing';
}

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A small page for the customer's browser: no scripts, no external assets. */
function page(ctx: Koa.Context, status: number, title: string, text: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
  ctx.set('Cache-Control', 'no-store');
  ctx.body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">`
    + `<title>${escape(title)}</title><style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}</style></head>`
    + `<body><h1 id="title">${escape(title)}</h1><p id="message">${escape(text)}</p></body></html>`;
}
