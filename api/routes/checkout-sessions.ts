import { Type } from '@sinclair/typebox';
import { findAccountCustomer } from '../../db/customers';
import { findCheckoutSession, listCheckoutSessions, readCheckoutSession, type AnsweredCheckoutSession } from '../../db/checkout-sessions';
import { newUnguessableId } from '../../lib/ids';
import { expireCheckoutSession } from '../../workflows/checkout/client';
import { CHECKOUT_SESSION_STATUSES, EXPIRES_IN } from '../../contracts/checkout';
import { ApiError, withArticle } from '../errors';
import { reserveResourceId } from '../middleware/idempotency';
import { listStart, paginationError } from '../pagination';
import { defineRoute, workflowContext } from '../route';
import { CheckoutSessionSchema, serializeCheckoutSession } from '../../resources/checkout-sessions';
import { Amount, Currency, ExactlyOne, Id, Metadata, Obj, Pagination, RequiredWith } from '../../resources/schemas';
import { findVisible } from './environment-lookup';
import { checkRedirectUrl, LineItemsBody, openCheckoutSession, RedirectUrl, sessionAmount } from './checkout-open';

const TAG = 'Checkout sessions';

const present = (row: AnsweredCheckoutSession, publicUrl: string) => serializeCheckoutSession(row, publicUrl, row.client_secret ?? null);

const CreateBody = Obj({
  amount: Type.Optional(Amount),
  currency: Type.Optional(Currency),
  line_items: Type.Optional(LineItemsBody),
  success_url: RedirectUrl('where the customer is sent once paid, with session_id=<id> appended'),
  cancel_url: RedirectUrl('where the customer goes back to from the page\'s cancel link'),
  customer_id: Type.Optional(Id('cus')),
  save_payment_method: Type.Optional(Type.Boolean({ description: 'save the card given on the page to customer_id (which it needs), when the customer confirms with it' })),
  auto_capture: Type.Optional(Type.Boolean({ default: true, description: 'false: the session completes once the payment is authorized; capture it later' })),
  expires_in: Type.Optional(Type.Integer({
    minimum: EXPIRES_IN.min, maximum: EXPIRES_IN.max, default: EXPIRES_IN.default,
    description: 'seconds until the session expires and its payment is canceled (abandoned)',
  })),
  metadata: Type.Optional(Metadata),
}, {
  allOf: [
    ExactlyOne('amount', 'line_items'), RequiredWith('currency', 'amount'),
    // A card is saved only to a customer.
    {
      if: { not: { required: ['customer_id'] } },
      then: { properties: { save_payment_method: { 'x-error': 'needs customer_id: a card is saved to a customer', not: { const: true } } } },
    },
  ],
});

export const checkoutSessionRoutes = [
  defineRoute({
    method: 'post',
    path: '/checkout-sessions',
    tag: TAG,
    summary: 'Open a checkout session: its payment and a hosted page (url) to send the customer to; it expires after expires_in',
    permission: 'checkout:write',
    errors: ['amount_too_large', 'temporal_unavailable'],
    status: 201,
    message: 'Checkout session created',
    body: CreateBody,
    response: CheckoutSessionSchema,
    async handler({ body, access, deps, ctx, principal }) {
      const scope = await access.forAccount();
      const env = scope.environment;
      const { amount, currency, lineItems } = sessionAmount(body, scope.account.currency);
      await checkRedirectUrl(deps, scope.account.id, env, 'success_url', body.success_url);
      await checkRedirectUrl(deps, scope.account.id, env, 'cancel_url', body.cancel_url);
      if (body.customer_id && !(await findAccountCustomer(deps.db, env, scope.account.id, body.customer_id))) {
        throw ApiError.validation([{ path: 'body/customer_id', message: 'no such customer in this account' }]);
      }
      const sessionId = await reserveResourceId(ctx, newUnguessableId('cs'));
      const row = await openCheckoutSession(deps, { id: scope.account.id, workspace_id: scope.account.workspace_id, environment: env }, sessionId, {
        amount, currency, lineItems, successUrl: body.success_url, cancelUrl: body.cancel_url, customerId: body.customer_id,
        savePaymentMethod: body.save_payment_method, autoCapture: body.auto_capture, expiresIn: body.expires_in, metadata: body.metadata,
      }, workflowContext(ctx, principal));
      return { data: present(row, deps.config.publicUrl) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/checkout-sessions',
    tag: TAG,
    summary: 'List checkout sessions, newest first',
    permission: 'checkout:read',
    errors: ['invalid_pagination'],
    envelope: 'paginated',
    message: 'Checkout sessions retrieved',
    query: Obj({
      ...Pagination,
      starting_after: Type.Optional({ ...Id('cs'), description: 'A session of this list: the page of sessions right after it (older), for the next page.' }),
      ending_before: Type.Optional({ ...Id('cs'), description: 'A session of this list: the page of sessions right before it (newer), for the previous page.' }),
      status: Type.Optional(Type.Union(CHECKOUT_SESSION_STATUSES.map((s) => Type.Literal(s)))),
    }),
    response: Type.Array(CheckoutSessionSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const start = listStart(query);
      const listed = await listCheckoutSessions(deps.db, scope.environment, scope.account.id, { status: query.status }, start, query.limit ?? 10);
      if (!listed) throw paginationError(`query/${'startingAfter' in start ? 'starting_after' : 'ending_before'}`, 'no such checkout session in this account');
      return {
        data: listed.rows.map((row) => present(row, deps.config.publicUrl)),
        total: listed.total,
        hasMore: listed.hasMore,
        ...('page' in start ? {} : { page: null }),
      };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/checkout-sessions/:id',
    tag: TAG,
    summary: 'Get one checkout session',
    permission: 'checkout:read',
    message: 'Checkout session retrieved',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    response: CheckoutSessionSchema,
    async handler({ params, access, deps }) {
      const { row } = await findVisible(access, 'checkout session', (env) => readCheckoutSession(deps.db, env, params.id));
      return { data: present(row, deps.config.publicUrl) };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/checkout-sessions/:id/expire',
    tag: TAG,
    summary: 'Expire an open checkout session now: its payment is canceled (abandoned); not while that payment is being paid',
    permission: 'checkout:write',
    errors: ['invalid_state', 'temporal_unavailable'],
    message: 'Checkout session expired',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    response: CheckoutSessionSchema,
    async handler({ params, access, deps }) {
      const { row, env } = await findVisible(access, 'checkout session', (e) => findCheckoutSession(deps.db, e, params.id));
      if (row.status !== 'OPEN') throw new ApiError('invalid_state', `${withArticle(row.status)} checkout session cannot expire.`, { status: row.status });
      await expireCheckoutSession(await deps.temporal(), row.id, async () => (await findCheckoutSession(deps.db, env, row.id))?.status);
      const expired = await readCheckoutSession(deps.db, env, row.id);
      return { data: present(expired!, deps.config.publicUrl) };
    },
  }),
];
