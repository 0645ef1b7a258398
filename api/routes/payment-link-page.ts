import type Koa from 'koa';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { findAccount } from '../../db/accounts';
import type { Environment } from '../../db/environments';
import { findPaymentLink, type PaymentLinkRow } from '../../db/payment-links';
import { looksLikeId, newUnguessableId } from '../../lib/ids';
import { logger } from '../../lib/logger';
import { checkoutPageUrl } from '../../resources/checkout-sessions';
import type { ApiDeps } from '../deps';
import { openCheckoutSession } from './checkout-open';
import { sendPage } from '../checkout-page/html';
import { plainPage } from '../checkout-page/views';

const PATH = /^\/pay\/([^/]+)$/;
const ENVIRONMENTS: Environment[] = ['production', 'sandbox'];

/** Visits one source IP may make per minute before it is answered 429 (each visit opens a session and a payment). */
export const PAYMENT_LINK_VISITS_PER_IP_PER_MINUTE = 30;

/**
 * GET /pay/{plink_id}: a payment link's public URL (docs/checkout.md). No credentials: the link's id is
 * its capability. An active link sends the browser (303) to a new checkout session's hosted page,
 * opened from the link's items for the link's account, as POST /v1/checkout-sessions would; a link
 * turned off answers 410 with a page saying so, an unknown one 404. Every visit counts against its
 * source IP first (`perIpPerMinute`, 0 = no limit), in memory per API instance as the 3-D Secure
 * return's limits are, so a flood neither opens sessions nor reaches Postgres.
 */
export function paymentLinkPage(deps: ApiDeps, opts: { perIpPerMinute?: number } = {}): Koa.Middleware {
  const perMinute = opts.perIpPerMinute ?? PAYMENT_LINK_VISITS_PER_IP_PER_MINUTE;
  const perIp = perMinute > 0 ? new RateLimiterMemory({ keyPrefix: 'payment_link_ip', points: perMinute, duration: 60 }) : undefined;
  // Every other request passes straight through, without a promise of this middleware's own.
  return (ctx, next) => {
    const match = ctx.method === 'GET' ? PATH.exec(ctx.path) : null;
    return match ? visit(ctx, match[1]) : next();
  };

  async function visit(ctx: Koa.Context, encodedId: string): Promise<void> {
    ctx.state.routeTemplate = '/pay/:id';
    try {
      await perIp?.consume(ctx.ip);
    } catch (rejected) {
      if (!(rejected instanceof RateLimiterRes)) throw rejected;
      ctx.set('Retry-After', String(Math.max(1, Math.ceil(rejected.msBeforeNext / 1000))));
      page(ctx, 429, 'Too many requests', 'Please wait a moment, then try the link again.');
      return;
    }
    const found = await findLink(decoded(encodedId));
    if (!found) {
      page(ctx, 404, 'Link not found', 'This payment link does not exist. Check the address, or ask the seller for a new link.');
      return;
    }
    const { link, env } = found;
    const account = link.active ? await findAccount(deps.db, link.account_id) : undefined;
    if (!account || account.deleted) {
      page(ctx, 410, 'Link no longer available', 'This payment link is no longer available. Ask the seller for a new one.');
      return;
    }
    try {
      const session = await openCheckoutSession(deps, { id: account.id, workspace_id: account.workspace_id, environment: env }, newUnguessableId('cs'), {
        amount: Number(link.amount), currency: link.currency, lineItems: link.line_items, successUrl: link.success_url, cancelUrl: null,
        paymentLinkId: link.id,
      }, {
        requestId: ctx.state.requestId, traceId: ctx.state.traceId, spanId: ctx.state.spanId,
        // The customer's browser: no credential, so the link stands for who opened the session.
        actor: { type: 'system', id: link.id },
      });
      ctx.status = 303;
      ctx.set('Cache-Control', 'no-store');
      ctx.redirect(checkoutPageUrl(deps.config.publicUrl, session.id));
    } catch (err) {
      logger.warn({ err: String(err), account_id: account.id }, 'a payment link could not open a checkout session');
      page(ctx, 503, 'Temporarily unavailable', 'We could not open the payment page just now. Please try the link again in a moment.');
    }
  }

  async function findLink(id: string): Promise<{ link: PaymentLinkRow; env: Environment } | undefined> {
    if (!looksLikeId(id, 'plink')) return undefined;
    for (const env of ENVIRONMENTS) {
      const link = await findPaymentLink(deps.db, env, id);
      if (link) return { link, env };
    }
    return undefined;
  }
}

/** A path segment's text; a malformed percent-encoding names no link, so it is the empty string. */
function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return '';
  }
}

/** A small page for the customer's browser, in the hosted checkout's look and under its strict CSP. */
function page(ctx: Koa.Context, status: number, title: string, text: string): void {
  sendPage(ctx, status, plainPage(title, text));
}
