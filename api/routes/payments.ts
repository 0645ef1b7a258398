import { setTimeout as delay } from 'node:timers/promises';
import { Type } from '@sinclair/typebox';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/common';
import { envTable, Environment } from '../../db/environments';
import { presentCheckoutPayment, presentPayments } from '../../db/repositories/payments';
import { insertGuestCustomer } from '../../db/repositories/customers';
import { eraseSingleUseCards, findUsableCard, insertCard } from '../../db/repositories/payment-methods';
import { newId } from '../../lib/ids';
import { validateCard } from '../../lib/cards';
import type { AccountScope } from '../auth/access';
import type { Principal } from '../auth/authenticate';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { reserveResourceId } from '../middleware/idempotency';
import { defineRoute, workflowContext } from '../route';
import { Amount, Currency, Country, Id, Metadata, Obj, Pagination } from '../schemas';
import { findVisibleRow } from './environment-lookup';
import { PaymentOrCheckoutSchema as PaymentOrCheckout, PaymentSchema, PaymentStatusSchema } from '../resources/payments';
import {
  CommandResult, ConfirmInput, PaymentInput, PaymentStatus, paymentUpdates, paymentWorkflowId, SEARCH_ATTRIBUTES, TASK_QUEUES,
} from '../../workflows/shared';

const Routing = Obj({
  provider_config_ids: Type.Optional(Type.Array(Id('ppc'), { maxItems: 10, uniqueItems: true })),
  exclude_provider_config_ids: Type.Optional(Type.Array(Id('ppc'), { maxItems: 50, uniqueItems: true })),
  max_attempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 5 })),
});

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

const Installments = Type.Integer({ minimum: 1, maximum: 48 });

/** How long confirm waits for the walk before answering PROCESSING. */
const CONFIRM_WAIT_MS = 10_000;

const Includes = {
  include_charges: Type.Optional(Type.Boolean()),
  include_routing_plans: Type.Optional(Type.Boolean()),
  include_events: Type.Optional(Type.Boolean()),
  include_customer: Type.Optional(Type.Boolean()),
  include_payment_provider_details: Type.Optional(Type.Boolean({ description: 'reserved; provider snapshots are on embedded charges' })),
};

const isPublishable = (principal: Principal) => principal.kind === 'api_key' && principal.keyType === 'PUBLISHABLE';

/**
 * One answer for every payment_method_id a payment may not use (unknown, another account's, another
 * customer's, another payment's single-use card, deleted, used up), so that it never tells which.
 */
const unusablePaymentMethod = (path = 'body/payment_method_id') =>
  ApiError.validation([{ path, message: 'is not a payment method this payment can use' }]);

const CardBody = Obj({
  type: Type.Literal('CARD'),
  card: Obj({
    number: Type.String({ minLength: 1, maxLength: 30 }),
    exp_month: Type.Integer({ minimum: 1, maximum: 12 }),
    exp_year: Type.Integer({ minimum: 0, maximum: 9999 }),
    cvc: Type.String({ minLength: 3, maxLength: 4 }),
    holder_name: Type.Optional(Type.String({ maxLength: 200 })),
  }),
});


/** The operator's way into Temporal for this payment. */
function temporalLink(deps: ApiDeps, paymentId: string) {
  const workflowId = paymentWorkflowId(paymentId);
  const namespace = deps.config.temporal.namespace;
  return {
    workflow_id: workflowId,
    namespace,
    ui_url: `${deps.config.temporal.uiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`,
  };
}

/** The confirm fields, as both `POST /payments/{id}/confirm` and `POST /payments` with `confirm: true` take them. */
interface ConfirmFields {
  payment_method_id?: string;
  payment_method?: { card: Parameters<typeof validateCard>[0] & { holder_name?: string } };
  save_payment_method?: boolean;
}

/** The payment a confirm is for, as far as its card is concerned. */
interface ConfirmTarget {
  paymentId: string;
  accountId: string;
  customerId: string | null;
  /** Runs before a valid inline card is saved to `customerId` (create: writes the guest customer first). */
  beforeSave?: () => Promise<void>;
}

/**
 * The pm_ id a confirm goes on with, checked before anything reaches Temporal: a `payment_method_id`
 * this payment may use (a saved card of its customer, or its own single-use card; one 400 whatever the
 * reason), or a card given inline, validated and vaulted — saved to the payment's customer when asked
 * and there is one, else bound to this payment alone (`vaulted`). Only the id travels into the workflow.
 */
async function cardForConfirm(deps: ApiDeps, env: Environment, target: ConfirmTarget, body: ConfirmFields): Promise<{ paymentMethodId: string; vaulted?: string }> {
  if (body.payment_method_id) {
    const { paymentId, accountId, customerId } = target;
    const usable = await findUsableCard(deps.db, env, { paymentMethodId: body.payment_method_id, paymentId, accountId, customerId });
    if (!usable) throw unusablePaymentMethod();
    return { paymentMethodId: body.payment_method_id };
  }
  const checked = validateCard(body.payment_method!.card);
  if ('problems' in checked) {
    throw new ApiError('invalid_card', checked.problems[0].message, { fields: checked.problems.map((p) => ({ path: `body/payment_method/card/${p.field}`, message: p.message })) });
  }
  const saveTo = body.save_payment_method && target.customerId ? target.customerId : null;
  if (saveTo) await target.beforeSave?.();
  const row = await insertCard(deps.db, deps.vault, env, {
    accountId: target.accountId, customerId: saveTo, paymentId: saveTo ? null : target.paymentId,
    card: checked.card, holderName: body.payment_method!.card.holder_name,
  });
  return { paymentMethodId: row.id as string, vaulted: saveTo ? undefined : row.id as string };
}

/**
 * Waits for a confirm's walk (the `confirm` update, or a `create` that carries one) until it ends, or
 * 10 s with PROCESSING: the update goes on in the workflow, and webhooks and GET tell the rest. A late
 * failure of the abandoned call has nobody left to tell.
 */
function untilWalkEnds(update: Promise<CommandResult>): Promise<CommandResult> {
  update.catch(() => {});
  return Promise.race([update, delay(CONFIRM_WAIT_MS).then((): CommandResult => ({ status: 'PROCESSING', outcome: 'processing' }))]);
}

/** Whether the payment's workflow was started (false only when Temporal says there is no such workflow). */
async function workflowExists(deps: ApiDeps, paymentId: string): Promise<boolean> {
  try {
    await (await deps.temporal()).workflow.getHandle(paymentWorkflowId(paymentId)).describe();
    return true;
  } catch (err) {
    return !(err instanceof WorkflowNotFoundError);
  }
}

async function loadPayment(deps: ApiDeps, env: Environment, id: string) {
  return deps.db(envTable(env, 'payments')).where({ id }).first();
}

async function respondWithPayment(deps: ApiDeps, env: Environment, id: string, flags: Parameters<typeof presentPayments>[3]) {
  const row = await loadPayment(deps, env, id);
  const [payment] = await presentPayments(deps.db, env, [row], flags);
  return { ...payment, temporal: temporalLink(deps, id) };
}

/**
 * Sends an update to a payment's workflow and turns Temporal's answers into ours: a validator's
 * rejection is 409 invalid_state (nothing was written); a finished workflow takes no more commands.
 */
async function sendUpdate(deps: ApiDeps, env: Environment, paymentId: string, run: (handle: ReturnType<Awaited<ReturnType<ApiDeps['temporal']>>['workflow']['getHandle']>) => Promise<CommandResult>): Promise<CommandResult> {
  const client = await deps.temporal();
  try {
    return await run(client.workflow.getHandle(paymentWorkflowId(paymentId)));
  } catch (err) {
    const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
    if (cause instanceof ApplicationFailure) {
      const details = (cause.details?.[0] ?? {}) as Record<string, unknown>;
      if (cause.type === 'invalid_state') throw new ApiError('invalid_state', cause.message, details);
      if (cause.type === 'amount_exceeds_capturable') {
        throw ApiError.validation([{ path: 'body/amount', message: `must be at most the capturable ${String(details.capturable)}` }]);
      }
    }
    if (err instanceof WorkflowNotFoundError || /already completed|not found/i.test(String((err as Error)?.message))) {
      const row = await loadPayment(deps, env, paymentId);
      throw new ApiError('invalid_state', `A ${row?.status ?? 'finished'} payment takes no more commands.`, { status: row?.status });
    }
    throw err;
  }
}

async function findPayment(deps: ApiDeps, access: Parameters<typeof findVisibleRow>[1], id: string) {
  return findVisibleRow(deps.db, access, 'payments', id, 'payment');
}

export const paymentRoutes = [
  defineRoute({
    method: 'post',
    path: '/payments',
    tag: 'Payments',
    summary: 'Create a payment (intent) in CREATED; its workflow starts with it. With confirm: true, confirm it in the same request',
    permission: 'payment:create',
    errors: ['invalid_card', 'invalid_state', 'no_eligible_provider', 'temporal_unavailable'],
    status: 201,
    message: 'Payment created',
    body: Obj({
      amount: Amount,
      currency: Currency,
      auto_capture: Type.Optional(Type.Boolean({ default: true })),
      secure_mode: Type.Optional(Type.Union([Type.Literal('NONE'), Type.Literal('PREFERRED'), Type.Literal('REQUIRED')])),
      customer_id: Type.Optional(Id('cus')),
      customer: Type.Optional(Obj({
        name: Type.Optional(Type.String({ maxLength: 200 })),
        email: Type.Optional(Type.String({ format: 'email', maxLength: 320 })),
        phone: Type.Optional(Type.String({ maxLength: 40 })),
        country: Type.Optional(Country),
      })),
      installments: Type.Optional(Installments),
      checkout_session_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
      metadata: Type.Optional(Metadata),
      routing: Type.Optional(Routing),
      confirm: Type.Optional(Type.Boolean({
        description: 'Confirm the payment in the same request, with payment_method or payment_method_id (a saved card of customer_id) '
          + 'and save_payment_method, which are accepted only with confirm: true. The answer is the payment as confirm leaves it.',
      })),
      payment_method_id: Type.Optional(Id('pm')),
      payment_method: Type.Optional(CardBody),
      save_payment_method: Type.Optional(Type.Boolean()),
    }),
    response: PaymentSchema,
    async handler({ body, access, deps, ctx, principal }) {
      const scope: AccountScope = await access.forAccount();
      const env = scope.environment;
      if (body.customer_id && body.customer) {
        throw ApiError.validation([{ path: 'body/customer', message: 'give customer_id or customer, not both' }]);
      }
      if (!body.confirm) {
        const stray = (['payment_method_id', 'payment_method', 'save_payment_method'] as const).filter((k) => body[k] !== undefined);
        if (stray.length) throw ApiError.validation(stray.map((k) => ({ path: `body/${k}`, message: 'only with confirm: true' })));
      } else if (!body.payment_method_id && !body.payment_method) {
        throw ApiError.validation([{ path: 'body/payment_method', message: 'confirm: true needs payment_method or payment_method_id' }]);
      } else if (body.payment_method_id && body.payment_method) {
        throw ApiError.validation([{ path: 'body', message: 'give exactly one of payment_method_id and payment_method' }]);
      }
      if (body.customer_id) {
        const customer = await deps.db(envTable(env, 'customers')).where({ id: body.customer_id, account_id: scope.account.id, deleted: false }).first('id');
        if (!customer) throw ApiError.validation([{ path: 'body/customer_id', message: 'no such customer in this account' }]);
      }
      // Fail fast (503 database_unavailable) rather than start a payment whose row cannot be written now:
      // with credentials and accounts served from cache, nothing else here would have asked Postgres.
      await deps.db.raw('SELECT 1');
      const paymentId = await reserveResourceId(ctx, newId('pay'));
      // The guest customer's id is derived from the payment's, so a retried create makes the same one.
      const guestCustomer = body.customer ? { id: `cus_${paymentId.slice(4)}`, ...body.customer } : undefined;

      // Create and confirm: the card is checked (or vaulted) before anything starts, exactly as confirm
      // does, so a card this payment may not use leaves no payment behind. An inline card is bound to the
      // reserved payment id (payment_methods.payment_id has no foreign key: the row follows in the workflow).
      let confirmInput: ConfirmInput | undefined;
      let vaulted: string | undefined;
      if (body.confirm) {
        const card = await cardForConfirm(deps, env, {
          paymentId, accountId: scope.account.id, customerId: body.customer_id ?? guestCustomer?.id ?? null,
          // Saving to a guest customer needs its row first (payment_methods.customer_id references customers);
          // the workflow's createPaymentRecord then keeps it as it is.
          beforeSave: guestCustomer && (() => insertGuestCustomer(deps.db, env, scope.account.id, guestCustomer)),
        }, body);
        vaulted = card.vaulted;
        // routing and installments are the payment's own (as on a plain create); the walk reads them from its row.
        confirmInput = { paymentMethodId: card.paymentMethodId, context: workflowContext(ctx, principal) };
      }

      const input: PaymentInput = {
        paymentId,
        accountId: scope.account.id,
        workspaceId: scope.account.workspace_id,
        environment: env,
        amount: body.amount,
        currency: body.currency,
        autoCapture: body.auto_capture ?? true,
        secureMode: body.secure_mode ?? 'NONE',
        installments: body.installments ?? 1,
        customerId: body.customer_id,
        guestCustomer,
        checkoutSessionId: body.checkout_session_id,
        metadata: body.metadata ?? {},
        routing: body.routing ?? {},
        authExpiryMs: deps.config.authExpiryMs,
        paymentExpiryMs: deps.config.paymentExpiryMs,
        context: workflowContext(ctx, principal),
      };
      const client = await deps.temporal();
      // Update-with-start: the workflow starts (or is found, on a retry) and answers `create` once it
      // has written the row (with a confirm: once that confirm's walk has ended), so the row is readable
      // when we answer, and no row exists without its workflow. A retry finds the update `create` already
      // there and gets its answer: the walk runs once. REJECT_DUPLICATE: a retry after the workflow has
      // finished (SUCCEEDED, CANCELED) must not start a second run, which would walk (and charge) again.
      const update = client.workflow.executeUpdateWithStart(paymentUpdates.create, {
        updateId: 'create',
        args: confirmInput ? [{ confirm: confirmInput }] : [],
        startWorkflowOperation: new WithStartWorkflowOperation('paymentWorkflow', {
          workflowId: paymentWorkflowId(paymentId),
          taskQueue: TASK_QUEUES.payments,
          args: [input],
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          typedSearchAttributes: [
            { key: SEARCH_ATTRIBUTES.PaymentId, value: paymentId },
            { key: SEARCH_ATTRIBUTES.AccountId, value: scope.account.id },
            { key: SEARCH_ATTRIBUTES.Environment, value: env },
            { key: SEARCH_ATTRIBUTES.PaymentStatus, value: 'CREATED' },
          ],
          staticSummary: `${(body.amount / 100).toFixed(2)} ${body.currency} · ${scope.account.id} · ${paymentId}`,
          staticDetails: `Payment ${paymentId} of account ${scope.account.id} (${env}), ${body.amount} ${body.currency} minor units, auto_capture=${input.autoCapture}.`,
        }),
      });
      let result: CommandResult;
      try {
        result = confirmInput ? await untilWalkEnds(update) : await update;
        // Only PROCESSING may be answered before the row exists (a slow start): then wait for the update.
        if (result.outcome === 'processing' && !(await loadPayment(deps, env, paymentId))) result = await update;
      } catch (err) {
        // A retry of a payment whose workflow has finished: it exists, and it is answered as it stands.
        if (!(err instanceof WorkflowExecutionAlreadyStartedError) || !(await loadPayment(deps, env, paymentId))) {
          if (vaulted && !(await workflowExists(deps, paymentId))) await eraseSingleUseCards(deps.db, env, paymentId, vaulted);
          throw err;
        }
        result = { status: (await loadPayment(deps, env, paymentId)).status as PaymentStatus };
      }
      if (!confirmInput) return { data: await respondWithPayment(deps, env, paymentId, {}) };
      // A retry that vaulted the card again while the first try's confirm went on with its own: this copy is never used.
      if (vaulted && result.outcome !== 'processing') {
        const row = await loadPayment(deps, env, paymentId);
        if (row?.payment_method_id !== vaulted) await eraseSingleUseCards(deps.db, env, paymentId, vaulted);
      }
      // 201 whatever the walk's outcome, no_eligible_provider included: the payment exists, and its status
      // and last_error say how the confirm went (see docs/payments.md).
      return {
        data: await respondWithPayment(deps, env, paymentId, { include_charges: true }),
        message: result.outcome === 'processing' ? 'Payment is processing' : 'Payment created and confirmed',
      };
    },
  }),

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
    }),
    response: PaymentOrCheckout,
    async handler({ params, body, access, deps, ctx, principal }) {
      // A checkout may pay, not choose who processes the payment: routing hints need a secret key or a user.
      if (isPublishable(principal) && body.routing !== undefined) {
        throw new ApiError('publishable_key_not_allowed', 'A publishable key cannot give routing hints.', { fields: ['body/routing'] });
      }
      if (!!body.payment_method_id === !!body.payment_method) {
        throw ApiError.validation([{ path: 'body', message: 'give exactly one of payment_method_id and payment_method' }]);
      }
      const { row: payment, env } = await findPayment(deps, access, params.id);
      if (!['CREATED', 'FAILED'].includes(payment.status)) {
        throw new ApiError('invalid_state', `A ${payment.status} payment cannot be confirmed.`, { status: payment.status });
      }
      // A saved card of this payment's customer, or a single-use card bound to this payment (any key);
      // a raw card is vaulted first, and only its pm_ id travels on into the workflow.
      const { paymentMethodId, vaulted } = await cardForConfirm(deps, env, {
        paymentId: payment.id, accountId: payment.account_id, customerId: payment.customer_id ?? null,
      }, body);
      let result: CommandResult;
      try {
        result = await sendUpdate(deps, env, payment.id, (handle) => untilWalkEnds(handle.executeUpdate(paymentUpdates.confirm, {
          args: [{ paymentMethodId, installments: body.installments, routing: body.routing, context: workflowContext(ctx, principal) }],
        })));
      } catch (err) {
        // Refused before anything was written (busy, or no longer confirmable): the card just given is unused.
        if (vaulted && err instanceof ApiError && err.reason === 'invalid_state') await eraseSingleUseCards(deps.db, env, payment.id, vaulted);
        throw err;
      }
      if (result.outcome === 'no_eligible_provider') {
        const row = await loadPayment(deps, env, payment.id);
        // The card was deleted or used up between the check above and the plan.
        if (row?.last_error?.code === 'payment_method_unavailable') throw unusablePaymentMethod(body.payment_method_id ? 'body/payment_method_id' : 'body/payment_method');
        throw new ApiError('no_eligible_provider', undefined, { status: 'FAILED', payment_id: payment.id });
      }
      const data = isPublishable(principal)
        ? await presentCheckoutPayment(deps.db, env, await loadPayment(deps, env, payment.id))
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
    errors: ['invalid_state', 'temporal_unavailable'],
    message: 'Payment captured',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    body: Obj({ amount: Type.Optional(Amount) }),
    response: PaymentSchema,
    async handler({ params, body, access, deps, ctx, principal }) {
      const { row: payment, env } = await findPayment(deps, access, params.id);
      await sendUpdate(deps, env, payment.id, (handle) => handle.executeUpdate(paymentUpdates.capture, {
        args: [{ amount: body.amount, context: workflowContext(ctx, principal) }],
      }));
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
      const { row: payment, env } = await findPayment(deps, access, params.id);
      await sendUpdate(deps, env, payment.id, (handle) => handle.executeUpdate(paymentUpdates.cancel, {
        // Stored and shown lower-case, whichever spelling was sent.
        args: [{ reason: body.reason?.toLowerCase(), context: workflowContext(ctx, principal) }],
      }));
      return { data: await respondWithPayment(deps, env, payment.id, { include_charges: true }) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/payments',
    tag: 'Payments',
    summary: 'List payments, newest first',
    permission: 'payment:read',
    envelope: 'paginated',
    message: 'Payments retrieved',
    query: Obj({
      ...Pagination,
      ...Includes,
      status: Type.Optional(PaymentStatusSchema),
      customer_id: Type.Optional(Id('cus')),
    }),
    response: Type.Array(PaymentSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const env = scope.environment;
      const page = query.page ?? 1;
      const limit = query.limit ?? 10;
      const base = deps.db(envTable(env, 'payments')).where({ account_id: scope.account.id });
      if (query.status) base.where({ status: query.status as PaymentStatus });
      if (query.customer_id) base.where({ customer_id: query.customer_id });
      const [{ count }] = await base.clone().count({ count: '*' });
      const rows = await base.orderBy('created_at', 'desc').orderBy('id', 'desc').offset((page - 1) * limit).limit(limit);
      return { data: await presentPayments(deps.db, env, rows, query), total: Number(count) };
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
    response: PaymentOrCheckout,
    async handler({ params, query, access, deps, principal }) {
      if (isPublishable(principal)) {
        const flags = Object.keys(query).filter((k) => k.startsWith('include_'));
        if (flags.length) throw new ApiError('publishable_key_not_allowed', `A publishable key cannot use ${flags.join(', ')}.`, { fields: flags.map((f) => `query/${f}`) });
        const { row, env } = await findPayment(deps, access, params.id);
        return { data: await presentCheckoutPayment(deps.db, env, row) };
      }
      const { row, env } = await findPayment(deps, access, params.id);
      const [payment] = await presentPayments(deps.db, env, [row], query);
      return { data: { ...payment, temporal: temporalLink(deps, row.id) } };
    },
  }),
];
