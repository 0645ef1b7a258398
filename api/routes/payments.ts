import { Type } from '@sinclair/typebox';
import type { Environment } from '../../db/environments';
import { eraseSingleUseCards } from '../../db/payment-methods';
import { findPayment, listPayments, readPayment } from '../../db/payments';
import { cancelPayment, capturePayment, confirmPayment } from '../../workflows/payments/client';
import { allows, type CommandResult } from '../../contracts/payments';
import type { Principal } from '../auth/authenticate';
import type { ApiDeps } from '../deps';
import { ApiError, withArticle } from '../errors';
import { commandOptions } from '../middleware/idempotency';
import { PaymentOrCheckoutSchema, PaymentSchema, PaymentStatusSchema } from '../../resources/payments';
import { listStart, paginationError } from '../pagination';
import { defineRoute, workflowContext } from '../route';
import { Amount, Id, Obj, Pagination } from '../../resources/schemas';
import { findVisible } from './environment-lookup';
import { CardBody, cardForConfirm, unusablePaymentMethod } from './payment-cards';
import { checkReturnUrlHost, sealedCapture, sealedConfirm, sealOf } from './payment-seals';
import { paymentCreateRoute } from './payment-create';
import { checkReturnUrl, Installments, ReturnUrl, Routing } from './payment-fields';
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
    summary: 'Confirm a payment with a payment method: routes it and walks the plan (cascading)',
    permission: 'payment:confirm',
    errors: ['publishable_key_not_allowed', 'invalid_state', 'invalid_card', 'no_eligible_provider', 'temporal_unavailable'],
    publishable: true,
    message: 'Payment confirmed',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    body: Obj({
      payment_method_id: Type.Optional(Id('pm')),
      payment_method: Type.Optional(CardBody),
      save_payment_method: Type.Optional(Type.Boolean()),
      installments: Type.Optional(Installments),
      routing: Type.Optional(Routing),
      return_url: Type.Optional(ReturnUrl),
    }),
    response: PaymentOrCheckoutSchema,
    async handler({ params, body, access, deps, ctx, principal }) {
      // A checkout may pay, not choose who processes the payment: routing hints need a secret key or a user.
      if (isPublishable(principal) && body.routing !== undefined) {
        throw new ApiError('publishable_key_not_allowed', 'A publishable key cannot give routing hints.', { fields: ['body/routing'] });
      }
      if (!!body.payment_method_id === !!body.payment_method) {
        throw ApiError.validation([{ path: 'body', message: 'give exactly one of payment_method_id and payment_method' }]);
      }
      const { row: payment, env } = await findVisiblePayment(deps, access, params.id);
      checkReturnUrl(body.return_url, env);
      await checkReturnUrlHost(deps, payment.account_id, body.return_url);
      // Refused before a card is vaulted; the workflow's validator says the same against its own state.
      if (!allows('confirm', payment.status)) {
        throw new ApiError('invalid_state', `${withArticle(payment.status)} payment cannot be confirmed.`, { status: payment.status });
      }
      // A saved card of this payment's customer, or a single-use card bound to this payment (any key);
      // a raw card is vaulted first, and only its pm_ id travels on into the workflow.
      const { paymentMethodId, vaulted } = await cardForConfirm(deps, env, {
        paymentId: payment.id, accountId: payment.account_id, customerId: payment.customer_id ?? null,
      }, body);
      let result: CommandResult;
      try {
        result = await confirmPayment(await deps.temporal(), payment.id, sealedConfirm(deps, payment.id, {
          paymentMethodId, installments: body.installments, routing: body.routing, context: workflowContext(ctx, principal),
          ...(body.return_url ? { returnUrl: body.return_url } : {}),
        }), statusOf(deps, env), commandOptions(ctx));
      } catch (err) {
        // Refused before anything was written (busy, or no longer confirmable): the card just given is unused.
        if (vaulted && err instanceof ApiError && err.reason === 'invalid_state') await eraseSingleUseCards(deps.db, env, payment.id, vaulted);
        throw err;
      }
      if (result.outcome === 'no_eligible_provider') {
        const row = await findPayment(deps.db, env, payment.id);
        // The card was deleted or used up between the check above and the plan.
        if (row?.last_error?.code === 'payment_method_unavailable') throw unusablePaymentMethod(body.payment_method_id ? 'body/payment_method_id' : 'body/payment_method');
        throw new ApiError('no_eligible_provider', undefined, { status: 'FAILED', payment_id: payment.id });
      }
      const data = isPublishable(principal)
        ? await presentCheckoutPayment(deps.db, env, (await findPayment(deps.db, env, payment.id)) ?? payment)
        : await respondWithPayment(deps, env, payment.id, { include_charges: true });
      return { data, message: result.outcome === 'processing' ? 'Payment is processing' : 'Payment confirmed' };
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
    summary: 'Get one payment, with a link to its workflow in the Temporal UI (publishable keys: the checkout view only)',
    permission: 'payment:read',
    errors: ['publishable_key_not_allowed'],
    publishable: true,
    message: 'Payment retrieved',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    query: Obj(Includes),
    response: PaymentOrCheckoutSchema,
    async handler({ params, query, access, deps, principal }) {
      if (isPublishable(principal)) {
        const flags = Object.keys(query).filter((k) => k.startsWith('include_'));
        if (flags.length) throw new ApiError('publishable_key_not_allowed', `A publishable key cannot use ${flags.join(', ')}.`, { fields: flags.map((f) => `query/${f}`) });
        const { row, env } = await findVisiblePayment(deps, access, params.id);
        return { data: await presentCheckoutPayment(deps.db, env, row) };
      }
      const { row, env, scope } = await findVisiblePayment(deps, access, params.id);
      requireIncludes(access, scope, query);
      return { data: await respondWithPayment(deps, env, row.id, query, row) };
    },
  }),
];
