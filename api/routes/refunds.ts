import { Type } from '@sinclair/typebox';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { envTable, Environment } from '../../db/environments';
import { serializeRefund } from '../../db/serialize';
import { newId } from '../../lib/ids';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { reserveResourceId } from '../middleware/idempotency';
import { defineRoute, workflowContext } from '../route';
import { Amount, ExactlyOne, Id, Metadata, Obj, OnlyWhen, Pagination, Resource, Timestamp } from '../schemas';
import { findVisibleRow } from './environment-lookup';
import {
  RefundReason, refundUpdates, refundWorkflowId, RefundWorkflowInput, SEARCH_ATTRIBUTES, TASK_QUEUES,
} from '../../workflows/shared';

const TAG = 'Refunds';
const REASONS: RefundReason[] = ['DUPLICATE', 'FRAUDULENT', 'REQUESTED_BY_CUSTOMER', 'OTHER'];
const STATUSES = ['PENDING', 'SUCCEEDED', 'FAILED'];
/** Charge statuses that were captured: refundable while something is left. */
const CAPTURED = ['CAPTURED', 'PARTIALLY_REFUNDED', 'REFUNDED'];

const NullableStr = Type.Union([Type.String(), Type.Null()]);
export const RefundSchema = Resource('refund', {
  id: Type.String(), account_id: Type.String(), charge_id: Type.String(), payment_id: Type.String(),
  status: Type.Union(STATUSES.map((s) => Type.Literal(s))),
  reason: Type.Union([...REASONS.map((r) => Type.Literal(r)), Type.Null()]), reason_other: NullableStr,
  amount: Type.Integer(), currency: Type.String(), metadata: Type.Record(Type.String(), Type.Unknown()),
  failure_reason: NullableStr, created_at: Timestamp, updated_at: Timestamp,
});


const available = (charge: any) => Number(charge.captured_amount) - Number(charge.refunded_amount) - Number(charge.pending_refund_amount);

/**
 * The charge a new refund targets, in the caller's account: the given charge, or the payment's
 * captured one. Unknown (or another account's) → 404; never captured → 409 invalid_state.
 */
async function targetCharge(deps: ApiDeps, env: Environment, accountId: string, body: { payment_id?: string; charge_id?: string }) {
  if (body.payment_id) {
    const payment = await deps.db(envTable(env, 'payments')).where({ id: body.payment_id, account_id: accountId }).first('id', 'status');
    if (!payment) throw ApiError.notFound('payment');
    const charge = await deps.db(envTable(env, 'charges')).where({ payment_id: payment.id }).whereIn('status', CAPTURED)
      .orderBy('attempt_no', 'desc').first();
    if (!charge) throw new ApiError('invalid_state', `A ${payment.status} payment has no captured charge to refund.`, { status: payment.status });
    return charge;
  }
  const charge = await deps.db(envTable(env, 'charges')).where({ id: body.charge_id, account_id: accountId }).first();
  if (!charge) throw ApiError.notFound('charge');
  if (!CAPTURED.includes(charge.status)) throw new ApiError('invalid_state', `A ${charge.status} charge cannot be refunded.`, { status: charge.status });
  return charge;
}

export const refundRoutes = [
  defineRoute({
    method: 'post',
    path: '/refunds',
    tag: TAG,
    summary: 'Refund a captured charge (or a payment\'s captured charge), in full or in part',
    permission: 'refund:create',
    errors: ['not_found', 'invalid_state', 'refund_exceeds_available', 'temporal_unavailable'],
    status: 201,
    message: 'Refund created',
    body: Obj({
      payment_id: Type.Optional(Id('pay')),
      charge_id: Type.Optional(Id('ch')),
      amount: Type.Optional(Amount),
      reason: Type.Optional(Type.Union(REASONS.map((r) => Type.Literal(r)))),
      reason_other: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
      metadata: Type.Optional(Metadata),
    }, { allOf: [ExactlyOne('payment_id', 'charge_id'), OnlyWhen('reason_other', 'reason', 'OTHER')] }),
    response: RefundSchema,
    async handler({ body, access, deps, ctx, principal }) {
      if (!!body.payment_id === !!body.charge_id) {
        throw ApiError.validation([{ path: 'body', message: 'give exactly one of payment_id and charge_id' }]);
      }
      if (body.reason === 'OTHER' && !body.reason_other) {
        throw ApiError.validation([{ path: 'body/reason_other', message: 'is required when reason is OTHER' }]);
      }
      if (body.reason_other !== undefined && body.reason !== 'OTHER') {
        throw ApiError.validation([{ path: 'body/reason_other', message: 'is only allowed with reason OTHER' }]);
      }
      const scope = await access.forAccount();
      const env = scope.environment;
      const refundId = await reserveResourceId(ctx, newId('re'));
      const refunds = () => deps.db(envTable(env, 'refunds'));

      // A retry (same Idempotency-Key) of a request that got as far as the reservation goes on with it.
      const earlier = await refunds().where({ id: refundId }).first();
      let chargeId: string;
      let paymentId: string;
      if (earlier && earlier.account_id === scope.account.id) {
        chargeId = earlier.charge_id;
        paymentId = earlier.payment_id;
      } else {
        const charge = await targetCharge(deps, env, scope.account.id, body);
        // A cheap early answer; the reservation in the workflow is what decides, atomically.
        const left = available(charge);
        if (body.amount !== undefined ? body.amount > left : left <= 0) {
          throw new ApiError('refund_exceeds_available', undefined, { available: Math.max(left, 0) });
        }
        chargeId = charge.id;
        paymentId = charge.payment_id;
      }

      const input: RefundWorkflowInput = {
        refundId,
        accountId: scope.account.id,
        workspaceId: scope.account.workspace_id,
        environment: env,
        paymentId,
        chargeId,
        amount: body.amount,
        reason: body.reason,
        reasonOther: body.reason_other,
        metadata: body.metadata ?? {},
        context: workflowContext(ctx, principal),
      };
      const client = await deps.temporal();
      // Update-with-start: the workflow's first activity reserves the amount (or refuses), so no refund
      // row or reservation can exist without the workflow that settles it. `create` answers with the
      // final status if the refund settles within 5 s, else PENDING.
      const acceptance = await client.workflow.executeUpdateWithStart(refundUpdates.create, {
        updateId: 'create',
        startWorkflowOperation: new WithStartWorkflowOperation('refundWorkflow', {
          workflowId: refundWorkflowId(refundId),
          taskQueue: TASK_QUEUES.payments,
          args: [input],
          workflowIdConflictPolicy: 'USE_EXISTING',
          typedSearchAttributes: [
            { key: SEARCH_ATTRIBUTES.PaymentId, value: paymentId },
            { key: SEARCH_ATTRIBUTES.AccountId, value: scope.account.id },
            { key: SEARCH_ATTRIBUTES.Environment, value: env },
            { key: SEARCH_ATTRIBUTES.RefundStatus, value: 'PENDING' },
          ],
          staticSummary: `refund ${body.amount !== undefined ? body.amount : 'of all that remains'} · ${chargeId} · ${refundId}`,
          staticDetails: `Refund ${refundId} of charge ${chargeId} (payment ${paymentId}), account ${scope.account.id} (${env}).`,
        }),
      });
      if (acceptance.outcome === 'rejected') throw new ApiError(acceptance.reason, acceptance.message, acceptance.details);
      const row = await refunds().where({ id: refundId }).first();
      return { data: serializeRefund(row), message: row.status === 'PENDING' ? 'Refund is pending' : 'Refund created' };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/refunds',
    tag: TAG,
    summary: 'List refunds, newest first',
    permission: 'refund:read',
    envelope: 'paginated',
    message: 'Refunds retrieved',
    query: Obj({
      ...Pagination,
      payment_id: Type.Optional(Id('pay')),
      charge_id: Type.Optional(Id('ch')),
      status: Type.Optional(Type.Union(STATUSES.map((s) => Type.Literal(s)))),
    }),
    response: Type.Array(RefundSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const page = query.page ?? 1;
      const limit = query.limit ?? 10;
      const base = deps.db(envTable(scope.environment, 'refunds')).where({ account_id: scope.account.id });
      if (query.payment_id) base.where({ payment_id: query.payment_id });
      if (query.charge_id) base.where({ charge_id: query.charge_id });
      if (query.status) base.where({ status: query.status });
      const [{ count }] = await base.clone().count({ count: '*' });
      const rows = await base.orderBy('created_at', 'desc').orderBy('id', 'desc').offset((page - 1) * limit).limit(limit);
      return { data: rows.map(serializeRefund), total: Number(count) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/refunds/:id',
    tag: TAG,
    summary: 'Get one refund',
    permission: 'refund:read',
    message: 'Refund retrieved',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    response: RefundSchema,
    async handler({ params, access, deps }) {
      const { row } = await findVisibleRow(deps.db, access, 'refunds', params.id, 'refund');
      return { data: serializeRefund(row) };
    },
  }),
];
