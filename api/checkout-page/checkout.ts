import { findAccount } from '../../db/accounts';
import { findCheckoutSession, type CheckoutSessionRow } from '../../db/checkout-sessions';
import type { Environment } from '../../db/environments';
import { readPayment, type ReadPayment } from '../../db/payments';
import { looksLikeId } from '../../lib/ids';
import type { ApiDeps } from '../deps';
import { returnUrlStillAllowed } from '../routes/payment-seals';
import type { CheckoutView, LineItem } from './views';

/** A session's id does not say its environment (it is a bare capability): it is looked up in both. */
const ENVIRONMENTS: Environment[] = ['production', 'sandbox'];

/** A session as the hosted page serves it: its row, its payment's row, and what every state shows. */
export interface Checkout {
  env: Environment;
  session: CheckoutSessionRow;
  /** Its payment as confirmWithCard takes it (with its client_secret and failed confirmations); none yet for a moment after the session's row is written. */
  payment: ReadPayment | undefined;
  view: CheckoutView;
  /**
   * Where the customer goes once paid: the merchant's success_url with `session_id=<id>` added, while its
   * host is still one the account allows (the list may have narrowed since the session was made); none
   * without one, and the page thanks the customer itself.
   */
  success: string | undefined;
}

/** The session `id` names, with its payment and merchant; nothing for an id that names none. */
export async function openCheckout(deps: Pick<ApiDeps, 'db'>, id: string): Promise<Checkout | undefined> {
  if (!looksLikeId(id, 'cs')) return undefined;
  for (const env of ENVIRONMENTS) {
    const session = await findCheckoutSession(deps.db, env, id);
    if (!session) continue;
    const [payment, account] = await Promise.all([
      readPayment(deps.db, env, session.payment_id),
      findAccount(deps.db, session.account_id),
    ]);
    const view: CheckoutView = {
      sessionId: session.id,
      merchantName: account?.name ?? 'the merchant',
      testMode: env === 'sandbox',
      amount: Number(session.amount),
      currency: session.currency,
      lineItems: lineItemsOf(session.line_items),
      cancelUrl: session.cancel_url ?? null,
    };
    const allowed = session.success_url && await returnUrlStillAllowed(deps, session.account_id, session.success_url);
    return { env, session, payment, view, success: allowed ? successTarget(session.success_url!, session.id) : undefined };
  }
  return undefined;
}

/** The session's line items as stored (jsonb), each checked for the fields the page shows. */
function lineItemsOf(stored: unknown): LineItem[] {
  if (!Array.isArray(stored)) return [];
  return stored.filter((item): item is LineItem => typeof item === 'object' && item !== null
    && typeof item.name === 'string' && Number.isInteger(item.quantity) && Number.isInteger(item.unit_amount));
}

/** The hosted page of a session, as the world reaches it (the `url` of the session's resource). */
export function checkoutPageUrl(publicUrl: string, sessionId: string): string {
  return `${publicUrl}/checkout/${encodeURIComponent(sessionId)}`;
}

/**
 * Whether a payment's return_url is one of this Switchboard's hosted checkout pages (where the hosted
 * page sends the customer back after 3-D Secure), not a merchant's page: the account's return_url
 * hosts are about the merchant's pages, and do not apply to it.
 */
export function isCheckoutPageUrl(publicUrl: string, url: string): boolean {
  return /^\/checkout\/cs_[0-9A-Za-z]+(?:\?|$)/.test(url.startsWith(publicUrl) ? url.slice(publicUrl.length) : '');
}

/** The success_url with `session_id=<id>` added. */
function successTarget(successUrl: string, sessionId: string): string {
  const url = new URL(successUrl);
  url.searchParams.set('session_id', sessionId);
  return url.toString();
}
