import { Type } from '@sinclair/typebox';
import { chargeHasOpenDispute } from '../../db/disputes';
import type { Environment } from '../../db/environments';
import {
  capturedChargeOfPayment, findChargeToRefund, findPaymentToRefund, findRefund, listRefunds, refundableAmount, RefundTargetCharge,
} from '../../db/refunds';
import { newId } from '../../lib/ids';
import { createRefund } from '../../workflows/refunds/client';
import { REFUND_REASONS, REFUND_STATUSES, refundCommand, RefundWorkflowInput, wasCaptured } from '../../contracts/refunds';
import type { ApiDeps } from '../deps';
import { ApiError, withArticle } from '../errors';
import { reserveResourceId } from '../middleware/idempotency';
import { RefundSchema, serializeRefund } from '../../resources/refunds';
import { defineRoute, workflowContext } from '../route';
import { Amount, ExactlyOne, Id, Obj, OnlyWhen, Metadata, Pagination } from '../../resources/schemas';
import { findVisible } from './environment-lookup';

const TAG = 'Refunds';

/**
 * The charge a new refund targets, in the caller's account: the given charge, or the payment's
 * captured one. Unknown (or another account's) → 404; never captured → 409 invalid_state.
 */
async function targetCharge(deps: ApiDeps, env: Environment, accountId: string, body: { payment_id?: string; charge_id?: string }): Promise<RefundTargetCharge> {
  if (body.payment_id) {
    const payment = await findPaymentToRefund(deps.db, env, accountId, body.payment_id);
    if (!payment) throw ApiError.notFound('payment');
    const charge = await capturedChargeOfPayment(deps.db, env, payment.id);
    if (!charge) throw new ApiError('invalid_state', `${withArticle(payment.status)} payment has no captured charge to refund.`, { status: payment.status });
    return charge;
  }
  const charge = body.charge_id ? await findChargeToRefund(deps.db, env, accountId, body.charge_id) : undefined;
  if (!charge) throw ApiError.notFound('charge');
  if (!wasCaptured(charge.status)) {
    throw new ApiError('invalid_state', `${withArticle(charge.status)} charge cannot be refunded.`, { status: charge.status });
  }
  return charge;
}

export const refundRoutes = [
  defineRoute({
    method: 'post',
    path: '/refunds',
    tag: TAG,
    summary: 'Refund a captured charge (or a payment\'s captured charge), in full or in part; not a disputed one (409 charge_disputed)',
    permission: 'refund:create',
    errors: ['not_found', 'invalid_state', 'charge_disputed', 'refund_exceeds_available', 'temporal_unavailable'],
    status: 201,
    message: 'Refund created',
    body: Obj({
      payment_id: Type.Optional(Id('pay')),
      charge_id: Type.Optional(Id('ch')),
      amount: Type.Optional(Amount),
      reason: Type.Optional(Type.Union(REFUND_REASONS.map((r) => Type.Literal(r)))),
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
      // A retry (same Idempotency-Key) of a request that got as far as the reservation goes on with it.
      const earlier = await findRefund(deps.db, env, refundId);
      let chargeId: string;
      let paymentId: string;
      if (earlier && earlier.account_id === scope.account.id) {
        chargeId = earlier.charge_id;
        paymentId = earlier.payment_id;
      } else {
        const charge = await targetCharge(deps, env, scope.account.id, body);
        // The money is already the cardholder's bank's claim: a refund would pay it twice.
        if (await chargeHasOpenDispute(deps.db, env, charge.id)) {
          throw new ApiError('charge_disputed', undefined, { charge_id: charge.id });
        }
        // A cheap early answer; the reservation in the workflow is what decides, atomically.
        const left = refundableAmount(charge);
        if (body.amount !== undefined ? body.amount > left : left <= 0) {
          throw new ApiError('refund_exceeds_available', undefined, { available: Math.max(left, 0) });
        }
        chargeId = charge.id;
        paymentId = charge.payment_id;
      }

      const facts: Omit<RefundWorkflowInput, 'seal'> = {
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
      const input: RefundWorkflowInput = { ...facts, seal: deps.vault.seal('refund', refundCommand(facts)) };
      await createRefund(await deps.temporal(), input);
      const row = await findRefund(deps.db, env, refundId);
      if (!row) throw new Error(`refund ${refundId} was accepted but its row is missing`);
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
      status: Type.Optional(Type.Union(REFUND_STATUSES.map((s) => Type.Literal(s)))),
    }),
    response: Type.Array(RefundSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const page = query.page ?? 1;
      const limit = query.limit ?? 10;
      const { payment_id, charge_id, status } = query;
      const { rows, total } = await listRefunds(deps.db, scope.environment, scope.account.id, { payment_id, charge_id, status }, { page, limit });
      return { data: rows.map(serializeRefund), total };
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
      const { row } = await findVisible(access, 'refund', (env) => findRefund(deps.db, env, params.id));
      return { data: serializeRefund(row) };
    },
  }),
];
