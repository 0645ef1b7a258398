import { Type } from '@sinclair/typebox';
import type { Client } from '@temporalio/client';
import { deleteGuestCustomer, findAccountCustomer, insertGuestCustomer } from '../../db/customers';
import type { Environment } from '../../db/environments';
import { eraseSingleUseCards } from '../../db/payment-methods';
import { findPayment, listPayments, paymentById, readPayment } from '../../db/payments';
import { newId } from '../../lib/ids';
import { logger } from '../../lib/logger';
import { isAlreadyStarted } from '../../workflows/client';
import {
  cancelPayment, capturePayment, confirmPayment, paymentWorkflowExists, startPayment, untilWalkEnds,
} from '../../workflows/payments/client';
import { allows, type CommandResult, type ConfirmInput, type PaymentInput } from '../../workflows/payments/contract';
import type { AccountScope } from '../auth/access';
import type { Principal } from '../auth/authenticate';
import type { ApiDeps } from '../deps';
import { ApiError, withArticle } from '../errors';
import { commandOptions, reserveResourceId } from '../middleware/idempotency';
import { PaymentOrCheckoutSchema, PaymentSchema, PaymentStatusSchema } from '../resources/payments';
import { listStart, paginationError } from '../pagination';
import { defineRoute, workflowContext } from '../route';
import { Amount, Currency, Country, Id, Metadata, Obj, Pagination } from '../schemas';
import { findVisible } from './environment-lookup';
import { CardBody, cardForConfirm, unusablePaymentMethod } from './payment-cards';
import { checkReturnUrlHost, sealedCapture, sealedConfirm, sealedStart, sealOf } from './payment-seals';
import { presentCheckoutPayment, presentPayments, requireIncludes, respondWithPayment } from './payment-views';

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
const ReturnUrl = Type.String({
  format: 'uri', maxLength: 2048,
  description: 'where the customer\'s browser goes after authenticating (3-D Secure), with payment_intent=<id> appended: absolute https:// (http:// also in sandbox)',
});

/** A return_url is absolute https (http too in sandbox, for local shops): 400 at `body/return_url` otherwise. */
function checkReturnUrl(value: string | undefined, env: Environment): void {
  if (value === undefined) return;
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  const allowed = url && (url.protocol === 'https:' || (url.protocol === 'http:' && env === 'sandbox')) && !url.username && !url.password;
  if (!allowed) {
    throw ApiError.validation([{ path: 'body/return_url', message: env === 'sandbox' ? 'must be an absolute http:// or https:// URL' : 'must be an absolute https:// URL' }]);
  }
}

const Includes = {
  include_charges: Type.Optional(Type.Boolean()),
  include_routing_plans: Type.Optional(Type.Boolean()),
  include_events: Type.Optional(Type.Boolean()),
  include_customer: Type.Optional(Type.Boolean()),
  include_payment_provider_details: Type.Optional(Type.Boolean({ description: 'reserved; provider snapshots are on embedded charges' })),
};

const CreateBody = Obj({
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
      + 'and save_payment_method and return_url, which are accepted only with confirm: true. The answer is the payment as confirm leaves it.',
  })),
  payment_method_id: Type.Optional(Id('pm')),
  payment_method: Type.Optional(CardBody),
  save_payment_method: Type.Optional(Type.Boolean()),
  return_url: Type.Optional(ReturnUrl),
});

const isPublishable = (principal: Principal) => principal.kind === 'api_key' && principal.keyType === 'PUBLISHABLE';

const findVisiblePayment = (deps: ApiDeps, access: Parameters<typeof findVisible>[0], id: string) =>
  findVisible(access, 'payment', (env) => readPayment(deps.db, env, id));

/** The row's status, for the answer to a command the payment's finished workflow can no longer take. */
const statusOf = (deps: ApiDeps, env: Environment) => async (paymentId: string) => (await findPayment(deps.db, env, paymentId))?.status;

/** What a create wrote before its workflow's start, for it to take back if that workflow never starts. */
interface CreateWrites {
  /** The single-use card this request vaulted. */
  vaulted?: string;
  /** The guest customer this request wrote (not one an earlier try with the same key wrote), with no card saved to it. */
  guestId?: string;
}

/**
 * Takes back what a create wrote when its workflow never started: the card it vaulted is erased and its
 * guest customer removed (unless the payment's row exists), so a 503 leaves nothing behind. Only when
 * that is known: Temporal could not be reached at all (no client: the start was never sent) or says no
 * such workflow exists. A start whose fate is unknown (Temporal went away during the call) may still
 * write the payment, which needs both, so they are kept. Never in the way of the error being answered.
 */
async function takeBackUnstarted(deps: ApiDeps, input: PaymentInput, writes: CreateWrites, client?: Client): Promise<void> {
  const { environment: env, paymentId } = input;
  if (!writes.vaulted && !writes.guestId) return;
  try {
    if (client && (await paymentWorkflowExists(client, paymentId))) return;
    if (writes.vaulted) await eraseSingleUseCards(deps.db, env, paymentId, writes.vaulted);
    if (writes.guestId) await deleteGuestCustomer(deps.db, env, input.accountId, writes.guestId, paymentById(deps.db, env, paymentId));
  } catch (err) {
    logger.warn({ err, paymentId }, 'could not take back what an unstarted payment wrote');
  }
}

/**
 * Update-with-start (workflows/payments/client.ts): the workflow starts (or is found, on a retry) and
 * answers `create` once it has written the row (with a confirm: once that confirm's walk has ended), so
 * the row is readable when we answer, and no row exists without its workflow. A retry after the
 * workflow has finished is refused a second run, and answered with the payment as it stands.
 */
async function runCreate(deps: ApiDeps, input: PaymentInput, confirm: ConfirmInput | undefined, writes: CreateWrites): Promise<CommandResult> {
  const env = input.environment;
  let client: Client;
  try {
    client = await deps.temporal();
  } catch (err) {
    await takeBackUnstarted(deps, input, writes);
    throw err;
  }
  const update = startPayment(client, input, confirm);
  try {
    const result = confirm ? await untilWalkEnds(update) : await update;
    // Only PROCESSING may be answered before the row exists (a slow start): then wait for the update.
    if (result.outcome === 'processing' && !(await findPayment(deps.db, env, input.paymentId))) return await update;
    return result;
  } catch (err) {
    const row = isAlreadyStarted(err) ? await findPayment(deps.db, env, input.paymentId) : undefined;
    // A retry of a payment whose workflow has finished: it exists, and it is answered as it stands.
    if (row) return { status: row.status };
    await takeBackUnstarted(deps, input, writes, client);
    throw err;
  }
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
    body: CreateBody,
    response: PaymentSchema,
    async handler({ body, access, deps, ctx, principal }) {
      const scope: AccountScope = await access.forAccount();
      const env = scope.environment;
      if (body.customer_id && body.customer) {
        throw ApiError.validation([{ path: 'body/customer', message: 'give customer_id or customer, not both' }]);
      }
      if (!body.confirm) {
        const stray = (['payment_method_id', 'payment_method', 'save_payment_method', 'return_url'] as const).filter((k) => body[k] !== undefined);
        if (stray.length) throw ApiError.validation(stray.map((k) => ({ path: `body/${k}`, message: 'only with confirm: true' })));
      } else if (!body.payment_method_id && !body.payment_method) {
        throw ApiError.validation([{ path: 'body/payment_method', message: 'confirm: true needs payment_method or payment_method_id' }]);
      } else if (body.payment_method_id && body.payment_method) {
        throw ApiError.validation([{ path: 'body', message: 'give exactly one of payment_method_id and payment_method' }]);
      }
      checkReturnUrl(body.return_url, env);
      await checkReturnUrlHost(deps, scope.account.id, body.return_url);
      if (body.customer_id) {
        const customer = await findAccountCustomer(deps.db, env, scope.account.id, body.customer_id);
        if (!customer) throw ApiError.validation([{ path: 'body/customer_id', message: 'no such customer in this account' }]);
      }
      // Fail fast (503 database_unavailable) rather than start a payment whose row cannot be written now:
      // with credentials and accounts served from cache, nothing else here would ask Postgres before the
      // start. A confirm does (it reads or vaults the card first), and so does a named customer (above).
      // A guest customer's row is such a write too.
      if (!body.confirm && !body.customer_id && !body.customer) await deps.db.raw('SELECT 1');
      const paymentId = await reserveResourceId(ctx, newId('pay'));
      // The guest customer's id is derived from the payment's, so a retried create makes the same one.
      const guestCustomer = body.customer ? { id: `cus_${paymentId.slice(4)}`, ...body.customer } : undefined;
      /**
       * Its row is written here, once the request is known good (after the card's checks, before saving a
       * card to it), and the workflow is given its id only: what a workflow is given stays in Temporal's
       * history for the namespace's retention, where a customer's erasure cannot reach it, so contact
       * details never go there (docs/security.md). Idempotent: a retried create writes nothing twice.
       */
      let guestWrite: Promise<boolean> | undefined;
      let savedToGuest = false;
      const writeGuest = () => (guestWrite ??= guestCustomer ? insertGuestCustomer(deps.db, env, scope.account.id, guestCustomer) : Promise.resolve(false));

      // Create and confirm: the card is checked (or vaulted) before anything starts, exactly as confirm
      // does, so a card this payment may not use leaves no payment behind. An inline card is bound to the
      // reserved payment id (payment_methods.payment_id has no foreign key: the row follows in the workflow).
      let confirmInput: ConfirmInput | undefined;
      let vaulted: string | undefined;
      if (body.confirm) {
        const card = await cardForConfirm(deps, env, {
          paymentId, accountId: scope.account.id, customerId: body.customer_id ?? guestCustomer?.id ?? null,
          // Saving to a guest customer needs its row first (payment_methods.customer_id references customers).
          beforeSave: async () => {
            savedToGuest = !!guestCustomer;
            await writeGuest();
          },
        }, body);
        vaulted = card.vaulted;
        // routing and installments are the payment's own (as on a plain create); the walk reads them from its row.
        confirmInput = sealedConfirm(deps, paymentId, {
          paymentMethodId: card.paymentMethodId, context: workflowContext(ctx, principal), ...(body.return_url ? { returnUrl: body.return_url } : {}),
        });
      }

      const guestWritten = await writeGuest();

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
        customerId: body.customer_id ?? guestCustomer?.id,
        checkoutSessionId: body.checkout_session_id,
        metadata: body.metadata ?? {},
        routing: body.routing ?? {},
        authExpiryMs: deps.config.authExpiryMs,
        paymentExpiryMs: deps.config.paymentExpiryMs,
        authenticationTimeoutMs: deps.config.authenticationTimeoutMs,
        leanCreate: true,
        authorizeInTask: true,
        authorizeWithRow: true,
        idStream: true,
        context: workflowContext(ctx, principal),
      };
      // A guest with a card saved to it stays (the card refers to it) if the workflow never starts.
      const result = await runCreate(deps, sealedStart(deps, input), confirmInput, { vaulted, guestId: guestWritten && !savedToGuest ? guestCustomer?.id : undefined });
      if (!confirmInput) return { data: await respondWithPayment(deps, env, paymentId, {}) };
      // The payment as the walk left it: the answer, and which card it kept.
      const row = await readPayment(deps.db, env, paymentId);
      // A retry that vaulted the card again while the first try's confirm went on with its own: this copy is never used.
      if (vaulted && result.outcome !== 'processing' && row?.payment_method_id !== vaulted) {
        await eraseSingleUseCards(deps.db, env, paymentId, vaulted);
      }
      // 201 whatever the walk's outcome, no_eligible_provider included: the payment exists, and its status
      // and last_error say how the confirm went (see docs/payments.md).
      return {
        data: await respondWithPayment(deps, env, paymentId, { include_charges: true }, row),
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
