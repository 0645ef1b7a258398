import { Type, type Static } from '@sinclair/typebox';
import type { Client } from '@temporalio/client';
import { deleteGuestCustomer, findAccountCustomer, insertGuestCustomer } from '../../db/customers';
import type { Environment } from '../../db/environments';
import { eraseSingleUseCards } from '../../db/payment-methods';
import { findPayment, paymentById, readPayment } from '../../db/payments';
import { newId } from '../../lib/ids';
import { logger } from '../../lib/logger';
import { isAlreadyStarted } from '../../workflows/client';
import { paymentWorkflowExists, startPayment, untilWalkEnds } from '../../workflows/payments/client';
import type { CommandResult, ConfirmInput, PaymentInput } from '../../contracts/payments';
import type { RequestContext } from '../../contracts/temporal';
import type { AccountScope } from '../auth/access';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { reserveResourceId } from '../middleware/idempotency';
import { PaymentSchema } from '../../resources/payments';
import { defineRoute, workflowContext } from '../route';
import { Amount, Country, Currency, Id, Metadata, Obj } from '../../resources/schemas';
import { CardBody, cardForConfirm } from './payment-cards';
import { checkReturnUrl, Installments, ReturnUrl, Routing } from './payment-fields';
import { checkReturnUrlHost, sealedConfirm, sealedStart } from './payment-seals';
import { respondWithPayment } from './payment-views';

// POST /payments: a payment's create (and, with confirm: true, its confirm in the same request), apart
// from the routes acting on an existing payment (payments.ts) because it alone writes before a workflow
// exists and takes that back when the workflow never starts.

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

/** The body's fields that go together: a customer once, and the confirm's fields only with confirm: true. */
function checkCreateBody(body: Static<typeof CreateBody>, env: Environment): void {
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
}

/** The workflow's start input: what the API decided about the payment (sealed by sealedStart). */
function paymentInputOf(
  deps: ApiDeps, scope: AccountScope, paymentId: string, body: Static<typeof CreateBody>, guestId: string | undefined, context: RequestContext,
): PaymentInput {
  return {
    paymentId,
    accountId: scope.account.id,
    workspaceId: scope.account.workspace_id,
    environment: scope.environment,
    amount: body.amount,
    currency: body.currency,
    autoCapture: body.auto_capture ?? true,
    secureMode: body.secure_mode ?? 'NONE',
    installments: body.installments ?? 1,
    customerId: body.customer_id ?? guestId,
    checkoutSessionId: body.checkout_session_id,
    metadata: body.metadata ?? {},
    routing: body.routing ?? {},
    authExpiryMs: deps.config.authExpiryMs,
    paymentExpiryMs: deps.config.paymentExpiryMs,
    authenticationTimeoutMs: deps.config.authenticationTimeoutMs,
    context,
  };
}

export const paymentCreateRoute = defineRoute({
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
      checkCreateBody(body, env);
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

      const input = paymentInputOf(deps, scope, paymentId, body, guestCustomer?.id, workflowContext(ctx, principal));
      // A guest with a card saved to it stays (the card refers to it) if the workflow never starts.
      const result = await runCreate(deps, sealedStart(deps, input), confirmInput, { vaulted, guestId: guestWritten && !savedToGuest ? guestCustomer?.id : undefined });
      // A payment made by this request has received no money before it, so it has no dispute to read.
      if (!confirmInput) return { data: await respondWithPayment(deps, env, paymentId, {}, undefined, { disputes: false }) };
      // The payment as the walk left it: the answer, and which card it kept.
      const row = await readPayment(deps.db, env, paymentId, { withCharges: true });
      // A retry that vaulted the card again while the first try's confirm went on with its own: this copy is never used.
      if (vaulted && result.outcome !== 'processing' && row?.payment_method_id !== vaulted) {
        await eraseSingleUseCards(deps.db, env, paymentId, vaulted);
      }
      // 201 whatever the walk's outcome, no_eligible_provider included: the payment exists, and its status
      // and last_error say how the confirm went (see docs/payments.md).
      return {
        data: await respondWithPayment(deps, env, paymentId, { include_charges: true }, row, { disputes: false }),
        message: result.outcome === 'processing' ? 'Payment is processing' : 'Payment created and confirmed',
      };
    },
  });
