import type Koa from 'koa';
import coBody from 'co-body';
import type { Environment } from '../../db/environments';
import { findCharge, findPayment, updateCharge, type PaymentRow } from '../../db/payments';
import { looksLikeId } from '../../lib/ids';
import { logger } from '../../lib/logger';
import { PaymentWorkflowClosedError, returnFromAuthentication } from '../../workflows/payments/client';
import type { ApiDeps } from '../deps';

const PATH = /^\/v1\/payments\/([^/]+)\/authentication-return$/;
const ENVIRONMENTS: Environment[] = ['production', 'sandbox'];
const MAX_PARAMS = 20;
const MAX_PARAM_LENGTH = 8192;

/**
 * GET|POST /v1/payments/{id}/authentication-return?charge={ch}: where a processor sends the customer's
 * browser back after 3-D Secure (docs/authentication.md). No credentials (it is the customer's browser):
 * what it can do is ask the processor how the authentication ended, which the processor answers, so a
 * forged return changes nothing. The processor's parameters (Adyen's redirectResult, …) are sealed on the
 * charge for the activity that completes the step — never in workflow history — and secrets such as
 * Stripe's client secret are dropped. Then the browser goes to the merchant's return_url with
 * `payment_intent=<id>` and `redirect_status`, or sees a page saying the payment is complete.
 */
export function authenticationReturn(deps: ApiDeps): Koa.Middleware {
  // Every other request passes straight through, without a promise of this middleware's own.
  return (ctx, next) => {
    const match = ctx.method === 'GET' || ctx.method === 'POST' ? PATH.exec(ctx.path) : null;
    return match ? complete(ctx, match[1]) : next();
  };

  async function complete(ctx: Koa.Context, encodedPaymentId: string): Promise<void> {
    ctx.state.routeTemplate = '/v1/payments/:id/authentication-return';
    const paymentId = decoded(encodedPaymentId);
    const chargeId = typeof ctx.query.charge === 'string' ? ctx.query.charge : '';
    const found = looksLikeId(paymentId, 'pay') && looksLikeId(chargeId, 'ch') ? await findPaymentAnywhere(deps, paymentId) : undefined;
    const charge = found && await findCharge(deps.db, found.env, chargeId);
    if (!found || !charge || charge.payment_id !== paymentId) {
      page(ctx, 404, 'Payment not found', 'This link does not belong to a payment.');
      return;
    }
    const { env } = found;
    if (charge.status === 'REQUIRES_ACTION') {
      const params = await returnParams(ctx);
      await updateCharge(deps.db, env, chargeId, { return_params_sealed: deps.vault.encryptJson(params) });
      try {
        await returnFromAuthentication(await deps.temporal(), paymentId, chargeId, async (id) => (await findPayment(deps.db, env, id))?.status);
      } catch (err) {
        // The processor's notification completes it too: the customer is sent on whatever happened here.
        if (!(err instanceof PaymentWorkflowClosedError)) logger.warn({ payment_id: paymentId, charge_id: chargeId, err: String(err) }, 'authentication return not delivered');
      }
    }
    const payment = (await findPayment(deps.db, env, paymentId)) ?? found.payment;
    const status = redirectStatus(payment);
    if (payment.return_url) {
      const target = new URL(payment.return_url);
      target.searchParams.set('payment_intent', payment.id);
      target.searchParams.set('redirect_status', status);
      ctx.status = 303;
      ctx.redirect(target.toString());
      return;
    }
    const [title, text] = status === 'succeeded'
      ? ['Payment complete', 'Thank you: your payment is complete. You can close this window.']
      : status === 'failed'
        ? ['Payment not completed', 'The payment could not be completed. You can close this window and try again.']
        : ['Payment processing', 'Your payment is being processed. You can close this window.'];
    page(ctx, 200, title, text);
  }
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
