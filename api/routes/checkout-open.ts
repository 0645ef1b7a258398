import { Type } from '@sinclair/typebox';
import { findAccountSetting } from '../../db/accounts';
import { readCheckoutSession, type AnsweredCheckoutSession } from '../../db/checkout-sessions';
import type { Environment } from '../../db/environments';
import { newId } from '../../lib/ids';
import { parseReturnUrlHosts, RETURN_URL_HOSTS, returnUrlHostAllowed } from '../../lib/return-url-hosts';
import { startCheckoutSession } from '../../workflows/checkout/client';
import { EXPIRES_IN, type CheckoutSessionInput, type LineItem } from '../../contracts/checkout';
import type { PaymentInput } from '../../contracts/payments';
import type { RequestContext } from '../../contracts/temporal';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { Amount, Obj } from '../../resources/schemas';
import { sealedStart } from './payment-seals';
import { checkBrowserUrl } from './payment-fields';

// What opening a checkout session takes, shared by POST /v1/checkout-sessions and a payment link's
// visit (payment-link-page.ts): the request fields both accept, their checks, and the session's start.

export const LineItemBody = Obj({
  name: Type.String({ minLength: 1, maxLength: 250 }),
  quantity: Type.Integer({ minimum: 1, maximum: 10_000 }),
  unit_amount: Amount,
});
export const LineItemsBody = Type.Array(LineItemBody, {
  minItems: 1, maxItems: 100, description: 'what is bought; the amount is the sum of quantity × unit_amount (at most 99,999,999)',
});

/** Where the customer's browser is sent once the session ends: absolute https (http also in sandbox). */
export const RedirectUrl = (what: string) => Type.String({
  format: 'uri', maxLength: 2048, description: `${what}: absolute https:// (http:// also in sandbox), on a host the account's return_url_hosts allow`,
});

/** What a session is for: an amount and currency, or lines (in the currency given, else the account's). */
export interface SessionAmountFields { amount?: number; currency?: string; line_items?: LineItem[] }

/** The session's amount, currency and lines: amount with currency, or line_items (their sum), never both: 400 otherwise. */
export function sessionAmount(body: SessionAmountFields, accountCurrency: string | null): { amount: number; currency: string; lineItems: LineItem[] | null } {
  if ((body.amount === undefined) === (body.line_items === undefined)) {
    throw ApiError.validation([{ path: 'body', message: 'give exactly one of amount and line_items' }]);
  }
  if (body.amount !== undefined) {
    if (!body.currency) throw ApiError.validation([{ path: 'body/currency', message: 'is required with amount' }]);
    return { amount: body.amount, currency: body.currency, lineItems: null };
  }
  const lineItems = body.line_items!.map(({ name, quantity, unit_amount }) => ({ name, quantity, unit_amount }));
  const amount = lineItems.reduce((sum, item) => sum + item.quantity * item.unit_amount, 0);
  if (amount > Amount.maximum!) {
    // Each line is valid; only their sum is not, which no schema can say: 422, not 400.
    throw new ApiError('amount_too_large', `The line items add up to ${amount}, more than the ${Amount.maximum} one payment may be.`, { amount, maximum: Amount.maximum, fields: ['body/line_items'] });
  }
  const currency = body.currency ?? accountCurrency;
  if (!currency) throw ApiError.validation([{ path: 'body/currency', message: 'is required: the account has no default currency' }]);
  return { amount, currency, lineItems };
}

/**
 * A success_url or cancel_url: absolute https (http too in sandbox, for local shops), without
 * credentials, on a host the account's `return_url_hosts` allow (an open redirect otherwise): 400 at
 * `body/<field>`.
 */
export async function checkRedirectUrl(deps: Pick<ApiDeps, 'db'>, accountId: string, env: Environment, field: string, value: string | undefined): Promise<void> {
  if (value === undefined) return;
  const url = checkBrowserUrl(value, env, field);
  const hosts = parseReturnUrlHosts((await findAccountSetting(deps.db, accountId, RETURN_URL_HOSTS))?.value);
  if (!returnUrlHostAllowed(hosts, url)) {
    throw ApiError.validation([{ path: `body/${field}`, message: `host ${url.hostname} is not one of the account's return_url_hosts` }]);
  }
}

/** The account a session is opened for. */
export interface SessionAccount { id: string; workspace_id: string; environment: Environment }

/** A session's facts once checked: what is bought, where the customer goes, and how the payment is taken. */
export interface SessionFacts {
  amount: number;
  currency: string;
  lineItems: LineItem[] | null;
  successUrl: string | null;
  cancelUrl: string | null;
  customerId?: string;
  savePaymentMethod?: boolean;
  autoCapture?: boolean;
  expiresIn?: number;
  metadata?: Record<string, string>;
  paymentLinkId?: string;
}

/** Past this after the session's expiry, its payment expires on its own if the session's cancel never came. */
const PAYMENT_EXPIRY_MARGIN_MS = 3_600_000;

/**
 * Opens a checkout session: its workflow writes its row and starts its payment (created through the
 * payments' own start, sealed here as POST /v1/payments seals it, carrying `checkout_session_id`), then
 * the row is answered. `sessionId` is reserved by the caller (the Idempotency-Key's resource id): a retry
 * finds the row its first try wrote, or joins that try's workflow.
 */
export async function openCheckoutSession(
  deps: ApiDeps, account: SessionAccount, sessionId: string, facts: SessionFacts, context: RequestContext,
): Promise<AnsweredCheckoutSession> {
  const env = account.environment;
  const earlier = await readCheckoutSession(deps.db, env, sessionId);
  if (earlier && earlier.account_id === account.id) return earlier;
  const expiresInMs = (facts.expiresIn ?? EXPIRES_IN.default) * 1000;
  const paymentId = newId('pay');
  const metadata = facts.metadata ?? {};
  const autoCapture = facts.autoCapture ?? true;
  const payment: PaymentInput = sealedStart(deps, {
    paymentId, accountId: account.id, workspaceId: account.workspace_id, environment: env,
    amount: facts.amount, currency: facts.currency, autoCapture, secureMode: 'NONE', installments: 1,
    customerId: facts.customerId, checkoutSessionId: sessionId, metadata, routing: {},
    authExpiryMs: deps.config.authExpiryMs,
    // The session's expiry cancels its payment (`abandoned`); the payment's own expiry is only the backstop.
    paymentExpiryMs: Math.max(deps.config.paymentExpiryMs, expiresInMs + PAYMENT_EXPIRY_MARGIN_MS),
    authenticationTimeoutMs: deps.config.authenticationTimeoutMs,
    context,
  });
  const input: CheckoutSessionInput = {
    sessionId, accountId: account.id, workspaceId: account.workspace_id, environment: env, paymentId,
    amount: facts.amount, currency: facts.currency, lineItems: facts.lineItems, successUrl: facts.successUrl, cancelUrl: facts.cancelUrl,
    customerId: facts.customerId, savePaymentMethod: facts.savePaymentMethod ?? false, autoCapture,
    expiresAt: Date.now() + expiresInMs, metadata, paymentLinkId: facts.paymentLinkId, payment, context,
  };
  await startCheckoutSession(await deps.temporal(), input);
  const row = await readCheckoutSession(deps.db, env, sessionId);
  if (!row) throw new Error('a checkout session was opened but its row is missing');
  return row;
}
