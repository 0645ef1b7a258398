import type Koa from 'koa';
import coBody from 'co-body';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { confirmWithCard } from '../routes/payment-confirm';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { toApiError } from '../middleware/errors';
import { fieldOfPath, readCardForm, type CardField } from './card-form';
import { checkoutPageUrl, openCheckout, type Checkout } from './checkout';
import { originOf, pagePolicy, sendPage } from './html';
import { pageState, refusalMessage, type PageState } from './state';
import {
  authenticatePage, closedPage, completePage, expiredPage, formPage, paidPage, plainPage, processingPage, type FormState,
} from './views';

const PATH = /^\/checkout\/([^/]+)$/;
const FORM_LIMIT = '16kb';

/**
 * Requests one source IP may make to hosted pages per minute, in memory per API instance as the other
 * unauthenticated routes' budgets are: enough for a page refreshing every 2 s while a payment processes
 * and a few tries, not for walking guessed session ids or flooding Postgres.
 */
export const CHECKOUT_PAGE_REQUESTS_PER_IP_PER_MINUTE = 120;

const NOT_FOUND = () => plainPage('Checkout not found', 'This payment page does not exist. Check the link, or return to the shop and start again.');

/**
 * GET /checkout/{id}: the hosted payment page of a checkout session, in whichever state the session and
 * its payment are (docs/checkout.md); POST /checkout/{id}: its form. No credentials: the session's id
 * (80 random bits) is the capability. It works without JavaScript: the form posts, the card is checked
 * and the session's payment confirmed here (as a client-side confirmation: generic declines, decline
 * limits), and the answer is a redirect (Post/Redirect/Get) — to the merchant's success_url once paid,
 * else back to this page, which then shows the bank's step, the decline, or the end.
 */
export function hostedCheckoutPage(deps: ApiDeps, perIpPerMinute = CHECKOUT_PAGE_REQUESTS_PER_IP_PER_MINUTE): Koa.Middleware {
  const perIp = perIpPerMinute > 0 ? new RateLimiterMemory({ keyPrefix: 'checkout_page_ip', points: perIpPerMinute, duration: 60 }) : undefined;
  // Every other request passes straight through, without a promise of this middleware's own.
  return (ctx, next) => {
    const match = PATH.exec(ctx.path);
    if (!match) return next();
    ctx.state.routeTemplate = '/checkout/:id';
    if (ctx.method === 'GET' || ctx.method === 'HEAD') return answer(ctx, () => admitted(ctx, () => show(ctx, match[1])));
    if (ctx.method === 'POST') return answer(ctx, () => admitted(ctx, () => pay(ctx, match[1])));
    throw new ApiError('method_not_allowed', undefined, {}, { Allow: 'GET, HEAD, POST' });
  };

  /** Runs `handler` when the source IP has budget left; a 429 page saying when to try again otherwise. */
  async function admitted(ctx: Koa.Context, handler: () => Promise<void>): Promise<void> {
    try {
      await perIp?.consume(ctx.ip);
    } catch (rejected) {
      if (!(rejected instanceof RateLimiterRes)) throw rejected;
      ctx.set('Retry-After', String(Math.max(1, Math.ceil(rejected.msBeforeNext / 1000))));
      return sendPage(ctx, 429, plainPage('Too many requests', 'Please wait a moment, then reload this page.'));
    }
    return handler();
  }

  async function show(ctx: Koa.Context, id: string): Promise<void> {
    const checkout = await openCheckout(deps, decoded(id));
    if (!checkout) return sendPage(ctx, 404, NOT_FOUND());
    render(ctx, checkout, pageState(checkout.session, checkout.payment));
  }

  async function pay(ctx: Koa.Context, id: string): Promise<void> {
    const checkout = await openCheckout(deps, decoded(id));
    if (!checkout) return sendPage(ctx, 404, NOT_FOUND());
    const state = pageState(checkout.session, checkout.payment);
    // Paid, ended, or already on its way (a second press of the button): the page says which.
    if (state.kind !== 'open' || !checkout.payment) return seeOther(ctx, pagePath(checkout));

    const read = readCardForm(await formOf(ctx));
    if ('errors' in read) return render(ctx, checkout, { kind: 'open' }, { errors: read.errors, values: read.echo }, 400);
    try {
      const { payment } = await confirmWithCard(deps, {
        env: checkout.env,
        payment: checkout.payment,
        body: {
          payment_method: { type: 'CARD', card: read.card },
          // Back here after 3-D Secure (through the authentication return), to be sent on from this page.
          return_url: checkoutPageUrl(deps.config.publicUrl, checkout.session.id),
          ...(checkout.session.save_payment_method ? { save_payment_method: true } : {}),
        },
        caller: { kind: 'hosted_page', sessionId: checkout.session.id },
        ctx,
      });
      const after = pageState(checkout.session, payment);
      const target = after.kind === 'paid' ? checkout.success : undefined;
      return seeOther(ctx, target ?? pagePath(checkout));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      refused(ctx, checkout, err, read.echo);
    }
  }

  /** A confirm the API refused, shown on the form (or, when the payment has moved on, the page as it now is). */
  function refused(ctx: Koa.Context, checkout: Checkout, err: ApiError, values: FormState['values']): void {
    if (err.reason === 'invalid_state' || err.reason === 'too_many_attempts') return seeOther(ctx, pagePath(checkout));
    if (err.status >= 500) throw err;
    // The request's log line says why; the customer reads it in plain words.
    ctx.state.errorReason = err.reason;
    ctx.set(err.headers);
    const errors = fieldErrors(err);
    const message = Object.keys(errors).length ? undefined : refusalMessage(err.reason);
    render(ctx, checkout, { kind: 'open' }, { message, errors, values }, err.status);
  }

  /** The page for a state; `form` and `status` for a form shown again with what was wrong. */
  function render(ctx: Koa.Context, checkout: Checkout, state: PageState, form: FormState = {}, status = 200): void {
    const { view } = checkout;
    const { success } = checkout;
    switch (state.kind) {
      case 'paid':
        // A browser that does not follow the redirect has the page's link.
        if (!success) return sendPage(ctx, 200, completePage(view));
        ctx.set('Location', success);
        return sendPage(ctx, 303, paidPage(view, success));
      case 'open': {
        // The form's answer may redirect to the success_url: the policy lets the submission go there.
        const successOrigin = success ? originOf(success) : undefined;
        return sendPage(ctx, status, formPage(view, { message: state.message, ...form }), pagePolicy(successOrigin ? [successOrigin] : []));
      }
      case 'authenticate':
        return sendPage(ctx, 200, authenticatePage(view, state.url));
      case 'processing':
        return sendPage(ctx, 200, processingPage(view));
      case 'expired':
        return sendPage(ctx, 410, expiredPage(view));
      case 'closed':
        return sendPage(ctx, 200, closedPage(view, state.message));
    }
  }
}

/** Runs a page's handler; anything it throws becomes a page (never the API's JSON) with the error's status. */
async function answer(ctx: Koa.Context, handler: () => Promise<void>): Promise<void> {
  try {
    await handler();
  } catch (err) {
    const apiError = toApiError(err, ctx.state.requestId);
    ctx.state.errorReason = apiError.reason;
    ctx.set(apiError.headers);
    const [title, message] = apiError.status >= 500
      ? ['Payment page unavailable', 'We could not load this payment page just now. Nothing was charged. Please try again in a moment.']
      : ['Request not possible', apiError.message];
    sendPage(ctx, apiError.status, plainPage(title, message));
  }
}

const pagePath = (checkout: Checkout) => `/checkout/${encodeURIComponent(checkout.session.id)}`;

function seeOther(ctx: Koa.Context, location: string): void {
  ctx.status = 303;
  ctx.redirect(location);
}

/** The submitted form's fields; a body that is not a form (or too large) has none, and so fails the card's checks. */
async function formOf(ctx: Koa.Context): Promise<Record<string, unknown>> {
  if (!ctx.is('application/x-www-form-urlencoded')) return {};
  return await coBody.form(ctx, { limit: FORM_LIMIT }).catch(() => ({})) as Record<string, unknown>;
}

/** The fields an `invalid_card` names (`details.fields[].path`), in the customer's words. */
function fieldErrors(err: ApiError): Partial<Record<CardField, string>> {
  const fields = Array.isArray(err.details.fields) ? err.details.fields as { path?: unknown }[] : [];
  const errors: Partial<Record<CardField, string>> = {};
  for (const entry of fields) {
    const field = typeof entry?.path === 'string' ? fieldOfPath(entry.path) : undefined;
    if (field) errors[field] ??= FIELD_MESSAGES[field];
  }
  return errors;
}

const FIELD_MESSAGES: Record<CardField, string> = {
  number: 'Enter a valid card number.',
  expiry: 'Check the expiry date.',
  cvc: 'Check the security code.',
  name: 'Check the name on the card.',
};

/** A path segment's text; a malformed percent-encoding names no session. */
function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return '';
  }
}
