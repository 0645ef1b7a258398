import { Type } from '@sinclair/typebox';
import type { Environment } from '../../db/environments';
import { findPayment, listPayments, readPayment } from '../../db/payments';
import { cancelPayment, capturePayment } from '../../workflows/payments/client';
import type { Principal } from '../auth/authenticate';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { commandOptions } from '../middleware/idempotency';
import { PaymentOrCheckoutSchema, PaymentSchema, PaymentStatusSchema } from '../../resources/payments';
import { listStart, paginationError } from '../pagination';
import { defineRoute, workflowContext } from '../route';
import { Amount, Id, Obj, Pagination } from '../../resources/schemas';
import { findVisible } from './environment-lookup';
import { callerOf, ConfirmBody, confirmWithCard, requireClientSecret } from './payment-confirm';
import { sealedCapture, sealOf } from './payment-seals';
import { paymentCreateRoute } from './payment-create';
import { presentCheckoutPayment, presentPayments, requireIncludes, respondWithPayment } from './payment-views';

/** Why a payment is canceled, as Stripe spells it; the upper-case forms are accepted too, and stored lower-case. */
const CANCEL_REASONS = ['duplicate', 'fraudulent', 'requested_by_customer', 'abandoned'] as const;
type CancelReasonValue = typeof CANCEL_REASONS[number] | Uppercase<typeof CANCEL_REASONS[number]>;
const CancelReason = Type.Unsafe<CancelReasonValue>({
  anyOf: [
    { type: 'string', enum: [...CANCEL_REASONS], description: 'Stored and shown as `cancellation_reason`.' },
    { type: 'string', enum: CANCEL_REASONS.map((r) => r.toUpperCase()), deprecated: true, description: 'Upper-case aliases, accepted and stored lower-case.' },
  ],
  description: 'Why the payment is canceled: duplicate, fraudulent, requested_by_customer or abandoned (default requested_by_customer).',
});

const Includes = {
  include_charges: Type.Optional(Type.Boolean()),
  include_routing_plans: Type.Optional(Type.Boolean()),
  include_events: Type.Optional(Type.Boolean()),
  include_customer: Type.Optional(Type.Boolean()),
  include_payment_provider_details: Type.Optional(Type.Boolean({ description: 'reserved; provider snapshots are on embedded charges' })),
};

const isPublishable = (principal: Principal) => principal.kind === 'api_key' && principal.keyType === 'PUBLISHABLE';

const findVisiblePayment = (deps: ApiDeps, access: Parameters<typeof findVisible>[0], id: string) =>
  findVisible(access, 'payment', (env) => readPayment(deps.db, env, id));

/** The row's status, for the answer to a command the payment's finished workflow can no longer take. */
const statusOf = (deps: ApiDeps, env: Environment) => async (paymentId: string) => (await findPayment(deps.db, env, paymentId))?.status;

export const paymentRoutes = [
  paymentCreateRoute,

  defineRoute({
    method: 'post',
    path: '/payments/:id/confirm',
    tag: 'Payments',
    summary: 'Confirm a payment with a payment method: routes it and walks the plan (cascading). A publishable key gives the payment\'s client_secret',
    permission: 'payment:confirm',
    errors: ['publishable_key_not_allowed', 'invalid_state', 'too_many_attempts', 'too_many_declines', 'invalid_card', 'no_eligible_provider', 'temporal_unavailable'],
    publishable: true,
    message: 'Payment confirmed',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    body: ConfirmBody,
    response: PaymentOrCheckoutSchema,
    async handler({ params, body, access, deps, ctx, principal }) {
      const { row, env } = await findVisiblePayment(deps, access, params.id);
      const caller = callerOf(principal);
      const { payment, outcome } = await confirmWithCard(deps, { env, payment: row, body, caller, ctx });
      // A payment being confirmed had received no money before, so it has no dispute to read.
      const data = caller.kind === 'publishable'
        ? await presentCheckoutPayment(deps.db, env, payment)
        : await respondWithPayment(deps, env, row.id, { include_charges: true }, undefined, { disputes: false });
      return { data, message: outcome === 'processing' ? 'Payment is processing' : 'Payment confirmed' };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/payments/:id/capture',
    tag: 'Payments',
    summary: 'Capture an authorized payment, in full or in part',
    permission: 'payment:capture',
    errors: ['invalid_state', 'capture_declined', 'temporal_unavailable'],
    message: 'Payment captured',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    body: Obj({ amount: Type.Optional(Amount) }),
    response: PaymentSchema,
    async handler({ params, body, access, deps, ctx, principal }) {
      const { row: payment, env } = await findVisiblePayment(deps, access, params.id);
      const seal = sealedCapture(deps, payment.id, body.amount);
      await capturePayment(await deps.temporal(), payment.id, { amount: body.amount, seal, context: workflowContext(ctx, principal) }, statusOf(deps, env), commandOptions(ctx));
      return { data: await respondWithPayment(deps, env, payment.id, { include_charges: true }) };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/payments/:id/cancel',
    tag: 'Payments',
    summary: 'Cancel a payment (voids an authorization)',
    permission: 'payment:cancel',
    errors: ['invalid_state', 'temporal_unavailable'],
    message: 'Payment canceled',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    body: Obj({ reason: Type.Optional(CancelReason) }),
    response: PaymentSchema,
    async handler({ params, body, access, deps, ctx, principal }) {
      const { row: payment, env } = await findVisiblePayment(deps, access, params.id);
      // Stored and shown lower-case, whichever spelling was sent.
      const reason = body.reason?.toLowerCase();
      const seal = sealOf(deps, { kind: 'cancel', paymentId: payment.id, reason });
      await cancelPayment(await deps.temporal(), payment.id, { reason, seal, context: workflowContext(ctx, principal) }, statusOf(deps, env), commandOptions(ctx));
      return { data: await respondWithPayment(deps, env, payment.id, { include_charges: true }) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/payments',
    tag: 'Payments',
    summary: 'List payments, newest first',
    permission: 'payment:read',
    errors: ['invalid_pagination'],
    envelope: 'paginated',
    message: 'Payments retrieved',
    query: Obj({
      ...Pagination,
      starting_after: Type.Optional({ ...Id('pay'), description: 'A payment of this list: the page of payments right after it (older), for the next page.' }),
      ending_before: Type.Optional({ ...Id('pay'), description: 'A payment of this list: the page of payments right before it (newer), for the previous page.' }),
      ...Includes,
      status: Type.Optional(PaymentStatusSchema),
      customer_id: Type.Optional(Id('cus')),
    }),
    response: Type.Array(PaymentSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      requireIncludes(access, scope, query);
      const env = scope.environment;
      const start = listStart(query);
      const listed = await listPayments(deps.db, env, scope.account.id, { status: query.status, customer_id: query.customer_id }, start, query.limit ?? 10);
      if (!listed) {
        const cursor = 'startingAfter' in start ? 'starting_after' : 'ending_before';
        throw paginationError(`query/${cursor}`, 'no such payment in this account');
      }
      return {
        data: await presentPayments(deps.db, env, listed.rows, query),
        total: listed.total,
        hasMore: listed.hasMore,
        ...('page' in start ? {} : { page: null }),
      };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/payments/:id',
    tag: 'Payments',
    summary: 'Get one payment, with a link to its workflow in the Temporal UI (a publishable key gives the payment\'s client_secret and sees the checkout view only)',
    permission: 'payment:read',
    errors: ['publishable_key_not_allowed'],
    publishable: true,
    message: 'Payment retrieved',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    query: Obj({
      ...Includes,
      client_secret: Type.Optional(Type.String({
        minLength: 1, maxLength: 200,
        description: 'The payment\'s client_secret: required with a publishable key; checked when given with any other credential. A wrong one is the 404 of an unknown payment.',
      })),
    }),
    response: PaymentOrCheckoutSchema,
    async handler({ params, query, access, deps, principal }) {
      const { client_secret: clientSecret, ...includes } = query;
      if (isPublishable(principal)) {
        const flags = Object.keys(includes).filter((k) => k.startsWith('include_'));
        if (flags.length) throw new ApiError('publishable_key_not_allowed', `A publishable key cannot use ${flags.join(', ')}.`, { fields: flags.map((f) => `query/${f}`) });
        const { row, env } = await findVisiblePayment(deps, access, params.id);
        requireClientSecret(row, clientSecret, true);
        return { data: await presentCheckoutPayment(deps.db, env, row) };
      }
      const { row, env, scope } = await findVisiblePayment(deps, access, params.id);
      requireClientSecret(row, clientSecret, false);
      requireIncludes(access, scope, includes);
      return { data: await respondWithPayment(deps, env, row.id, includes, row) };
    },
  }),
];
