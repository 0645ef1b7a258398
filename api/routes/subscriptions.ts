import { Type } from '@sinclair/typebox';
import type { Environment } from '../../db/environments';
import { findSubscription, listSubscriptions } from '../../db/subscriptions';
import { findTestClock } from '../../db/test-clocks';
import { newId } from '../../lib/ids';
import { SUBSCRIPTION_STATUSES, type PauseCollection, type SubscriptionChange, type SubscriptionInput } from '../../contracts/billing';
import { startSubscription } from '../../workflows/billing/client';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { reserveResourceId } from '../middleware/idempotency';
import { listStart, paginationError } from '../pagination';
import { defineRoute, workflowContext } from '../route';
import { SubscriptionSchema, serializeSubscription } from '../../resources/subscriptions';
import { Id, Metadata, Obj, Pagination } from '../../resources/schemas';
import { findVisible } from './environment-lookup';
import { sealedStart, sendChange } from './billing-seals';
import {
  applyItemChanges, checkCustomer, checkPrices, checkSavedCard, checkTestClock, ItemChanges, MAX_ITEMS, Quantity,
} from './subscription-checks';

const TAG = 'Billing: subscriptions';

const Params = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });

/** The row as the API shows it, read after the workflow answered. */
export async function presentSubscription(deps: ApiDeps, env: Environment, id: string) {
  const row = await findSubscription(deps.db, env, id);
  if (!row) throw new Error(`subscription ${id} has no row after its workflow answered`);
  return serializeSubscription(row, deps.config);
}

export const subscriptionRoutes = [
  defineRoute({
    method: 'post',
    path: '/subscriptions',
    tag: TAG,
    summary: 'Subscribe a customer to one or more prices, billed on a card saved to them; answers once the first invoice\'s payment ended its walk',
    permission: 'billing:write',
    status: 201,
    message: 'Subscription created',
    errors: ['amount_too_large', 'invalid_state', 'temporal_unavailable'],
    body: Obj({
      customer_id: Id('cus'),
      items: Type.Array(Obj({ price_id: Id('price'), quantity: Type.Optional(Quantity) }), {
        minItems: 1, maxItems: MAX_ITEMS, description: 'distinct prices of one currency and one interval',
      }),
      default_payment_method_id: { ...Id('pm'), description: 'a card saved to the customer' },
      trial_period_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 730 })),
      cancel_at_period_end: Type.Optional(Type.Boolean()),
      metadata: Type.Optional(Metadata),
      test_clock_id: Type.Optional({ ...Id('clock'), description: 'sandbox only: the subscription lives by this clock\'s time' }),
    }),
    response: SubscriptionSchema,
    async handler({ body, access, deps, ctx, principal }) {
      const scope = await access.forAccount();
      const env = scope.environment;
      const accountId = scope.account.id;
      await checkCustomer(deps, env, accountId, body.customer_id);
      await checkSavedCard(deps, env, accountId, body.customer_id, body.default_payment_method_id);
      const asked = body.items.map((i, n) => ({ price_id: i.price_id, quantity: i.quantity ?? 1, path: `body/items/${n}` }));
      await checkPrices(deps, env, accountId, asked);
      if (body.test_clock_id !== undefined) await checkTestClock(deps, env, accountId, body.test_clock_id);
      const input: SubscriptionInput = {
        subscriptionId: await reserveResourceId(ctx, newId('sub')),
        accountId, workspaceId: scope.account.workspace_id, environment: env, customerId: body.customer_id,
        items: asked.map((i) => ({ id: newId('si'), price_id: i.price_id, quantity: i.quantity })),
        defaultPaymentMethodId: body.default_payment_method_id,
        ...(body.trial_period_days !== undefined ? { trialPeriodDays: body.trial_period_days } : {}),
        cancelAtPeriodEnd: body.cancel_at_period_end ?? false,
        metadata: body.metadata ?? {},
        ...(body.test_clock_id !== undefined ? { testClockId: body.test_clock_id } : {}),
        context: workflowContext(ctx, principal),
      };
      await startSubscription(await deps.temporal(), sealedStart(deps, input));
      return { data: await presentSubscription(deps, env, input.subscriptionId) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/subscriptions',
    tag: TAG,
    summary: 'List subscriptions, newest first',
    permission: 'billing:read',
    errors: ['invalid_pagination'],
    envelope: 'paginated',
    message: 'Subscriptions retrieved',
    query: Obj({
      ...Pagination,
      starting_after: Type.Optional({ ...Id('sub'), description: 'A subscription of this list: the page right after it (older).' }),
      ending_before: Type.Optional({ ...Id('sub'), description: 'A subscription of this list: the page right before it (newer).' }),
      status: Type.Optional(Type.Union(SUBSCRIPTION_STATUSES.map((s) => Type.Literal(s)))),
      customer_id: Type.Optional(Id('cus')),
      test_clock_id: Type.Optional(Id('clock')),
    }),
    response: Type.Array(SubscriptionSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const start = listStart(query);
      const filter = { status: query.status, customer_id: query.customer_id, test_clock_id: query.test_clock_id };
      const listed = await listSubscriptions(deps.db, scope.environment, scope.account.id, filter, start, query.limit ?? 10);
      if (!listed) throw paginationError(`query/${'startingAfter' in start ? 'starting_after' : 'ending_before'}`, 'no such subscription in this account');
      return {
        data: listed.rows.map((row) => serializeSubscription(row, deps.config)),
        total: listed.total, hasMore: listed.hasMore, ...('page' in start ? {} : { page: null }),
      };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/subscriptions/:id',
    tag: TAG,
    summary: 'Get one subscription, with its workflow\'s link for operators',
    permission: 'billing:read',
    message: 'Subscription retrieved',
    params: Params,
    response: SubscriptionSchema,
    async handler({ params, access, deps }) {
      const { row } = await findVisible(access, 'subscription', (env) => findSubscription(deps.db, env, params.id));
      return { data: serializeSubscription(row, deps.config) };
    },
  }),

  defineRoute({
    method: 'patch',
    path: '/subscriptions/:id',
    tag: TAG,
    summary: 'Change a subscription\'s items (prorated), cancel_at_period_end, card, pause_collection or metadata; applied once by its workflow',
    permission: 'billing:write',
    message: 'Subscription updated',
    errors: ['amount_too_large', 'invalid_state', 'temporal_unavailable'],
    params: Params,
    body: Obj({
      items: Type.Optional(ItemChanges),
      cancel_at_period_end: Type.Optional(Type.Boolean()),
      default_payment_method_id: Type.Optional({ ...Id('pm'), description: 'a card saved to the subscription\'s customer; retries an invoice in dunning at once' }),
      pause_collection: Type.Optional(Type.Union([
        Obj({ behavior: Type.Literal('void'), resumes_at: Type.Optional(Type.String({ format: 'date-time', description: 'when billing resumes by itself' })) }),
        Type.Null(),
      ], { description: 'pauses billing (each renewal\'s invoice is VOID at once) without ending the subscription; null resumes' })),
      metadata: Type.Optional(Metadata),
    }),
    response: SubscriptionSchema,
    async handler({ params, body, access, deps, ctx, principal }) {
      const { row, env } = await findVisible(access, 'subscription', (e) => findSubscription(deps.db, e, params.id));
      const change: Extract<SubscriptionChange, { kind: 'update' }> = { kind: 'update' };
      if (body.items !== undefined) change.items = await applyItemChanges(deps, env, row, body.items);
      if (body.cancel_at_period_end !== undefined) change.cancelAtPeriodEnd = body.cancel_at_period_end;
      if (body.default_payment_method_id !== undefined) {
        await checkSavedCard(deps, env, row.account_id, row.customer_id, body.default_payment_method_id);
        change.defaultPaymentMethodId = body.default_payment_method_id;
      }
      if (body.pause_collection !== undefined) change.pauseCollection = await pauseOf(deps, env, row.test_clock_id, body.pause_collection);
      if (body.metadata !== undefined) change.metadata = body.metadata;
      if (Object.keys(change).length === 1) return { data: serializeSubscription(row, deps.config) };
      await sendChange(deps, { ctx, principal, env, subscriptionId: row.id, change });
      return { data: await presentSubscription(deps, env, row.id) };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/subscriptions/:id/cancel',
    tag: TAG,
    summary: 'Cancel a subscription now: optionally credit its unused time (prorate) and bill what is owed on a final invoice now (invoice_now)',
    permission: 'billing:write',
    message: 'Subscription canceled',
    errors: ['invalid_state', 'temporal_unavailable'],
    params: Params,
    body: Obj({
      invoice_now: Type.Optional(Type.Boolean({ description: 'make the final invoice now (default false)' })),
      prorate: Type.Optional(Type.Boolean({ description: 'credit the unused time of the current period (default false)' })),
    }),
    response: SubscriptionSchema,
    async handler({ params, body, access, deps, ctx, principal }) {
      const { row, env } = await findVisible(access, 'subscription', (e) => findSubscription(deps.db, e, params.id));
      const change: SubscriptionChange = { kind: 'cancel', invoiceNow: body.invoice_now ?? false, prorate: body.prorate ?? false };
      await sendChange(deps, { ctx, principal, env, subscriptionId: row.id, change });
      return { data: await presentSubscription(deps, env, row.id) };
    },
  }),
];

/**
 * The pause as the workflow stores it; `resumes_at` must lie ahead of the subscription's time (its test
 * clock's, for one on a clock), or the pause would be over before it began.
 */
async function pauseOf(deps: ApiDeps, env: Environment, clockId: string | null, asked: { behavior: 'void'; resumes_at?: string } | null): Promise<PauseCollection | null> {
  if (asked === null) return null;
  if (asked.resumes_at === undefined) return { behavior: 'void', resumes_at: null };
  const resumesAt = new Date(asked.resumes_at);
  const clock = clockId ? await findTestClock(deps.db, env, clockId) : undefined;
  const now = clock ? new Date(clock.frozen_time) : new Date();
  if (!(resumesAt.getTime() > now.getTime())) throw ApiError.validation([{ path: 'body/pause_collection/resumes_at', message: `must be after the subscription's time (${now.toISOString()})` }]);
  return { behavior: 'void', resumes_at: resumesAt.toISOString() };
}
