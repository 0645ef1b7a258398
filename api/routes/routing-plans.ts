import { Type } from '@sinclair/typebox';
import { envTable, Environment } from '../../db/environments';
import type { Db } from '../../db/knex';
import { groupBy } from '../../db/repositories/routing';
import { iso, serializeRoutingPlan } from '../../db/serialize';
import { defineRoute } from '../route';
import { Obj } from '../schemas';
import { findVisibleRow } from './environment-lookup';
import { RoutingPlanSchema } from './routing-schemas';

const Includes = {
  include_charges: Type.Optional(Type.Boolean({ default: true, description: 'embed the charges (attempts) made under the plan' })),
  include_payment: Type.Optional(Type.Boolean({ default: true, description: 'embed the payment' })),
  include_attempts: Type.Optional(Type.Boolean({
    default: false,
    description: 'embed `attempts`: one compact line per charge, with the index of the candidate it tried',
  })),
};

interface IncludeFlags { include_charges?: boolean; include_payment?: boolean; include_attempts?: boolean }

/**
 * Plans as responses, with what the flags ask for. Plans come "with charges and payment embedded"
 * (docs/providers-and-routing.md#routing-plans-the-api), so those two are on unless turned off. Two
 * queries for any number of plans.
 */
async function present(db: Db, env: Environment, plans: any[], flags: IncludeFlags) {
  const withCharges = flags.include_charges ?? true;
  const withPayment = flags.include_payment ?? true;
  const withAttempts = flags.include_attempts ?? false;
  const planIds = plans.map((p) => p.id as string);
  const charges = (withCharges || withAttempts) && planIds.length
    ? await db(envTable(env, 'charges')).whereIn('routing_plan_id', planIds).orderBy('attempt_no', 'asc')
    : [];
  const payments = withPayment && planIds.length
    ? await db(envTable(env, 'payments')).whereIn('id', [...new Set(plans.map((p) => p.payment_id as string))])
    : [];
  const chargesByPlan = groupBy(charges, 'routing_plan_id');
  const paymentsById = new Map(payments.map((p) => [p.id as string, p]));
  return plans.map((plan) => {
    const planCharges = chargesByPlan.get(plan.id) ?? [];
    return serializeRoutingPlan(plan, {
      charges: withCharges ? planCharges : undefined,
      payment: withPayment ? paymentsById.get(plan.payment_id) ?? null : undefined,
      attempts: withAttempts ? planCharges.map((charge) => attemptOf(plan, charge)) : undefined,
    });
  });
}

function attemptOf(plan: any, charge: any) {
  const candidates = Array.isArray(plan.candidates) ? plan.candidates as { payment_provider_config_id?: string }[] : [];
  const index = candidates.findIndex((c) => c?.payment_provider_config_id === charge.payment_provider_config_id);
  return {
    attempt_no: charge.attempt_no,
    candidate_index: index >= 0 ? index : null,
    charge_id: charge.id,
    status: charge.status,
    payment_provider_config_id: charge.payment_provider_config_id ?? null,
    payment_provider_id: charge.payment_provider_id ?? null,
    payment_provider_method_id: charge.payment_provider_method_id ?? null,
    decline_code: charge.decline_code ?? null,
    created_at: iso(charge.created_at),
  };
}

export const routingPlanRoutes = [
  defineRoute({
    method: 'get',
    path: '/routing-plans',
    tag: 'Routing plans',
    summary: 'List the account\'s routing plans, newest first, with charges and payment embedded',
    permission: 'routing:read',
    message: 'Routing plans retrieved',
    query: Obj({
      payment_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'only the plans of this payment' })),
      ...Includes,
      page: Type.Optional(Type.Integer({ minimum: 1, description: 'with limit: that page; without either, the full list' })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'page size (default 10 when page is given)' })),
    }),
    response: Type.Array(RoutingPlanSchema),
    async handler({ query, access, deps }) {
      const { account, environment: env } = await access.forAccount();
      const q = deps.db(envTable(env, 'routing_plans')).where({ account_id: account.id })
        .orderBy('created_at', 'desc').orderBy('id', 'desc');
      if (query.payment_id) q.where({ payment_id: query.payment_id });
      // Pagination keys are accepted and the full list may be returned; we page only when asked to
      // (docs/providers-and-routing.md#routing-plans-the-api).
      if (query.page !== undefined || query.limit !== undefined) {
        const limit = query.limit ?? 10;
        q.limit(limit).offset(((query.page ?? 1) - 1) * limit);
      }
      return { data: await present(deps.db, env, await q, query) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/routing-plans/:id',
    tag: 'Routing plans',
    summary: 'Get one routing plan, with its charges and payment embedded',
    permission: 'routing:read',
    message: 'Routing plan retrieved',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    query: Obj(Includes),
    response: RoutingPlanSchema,
    async handler({ params, query, access, deps }) {
      const { row, env } = await findVisibleRow(deps.db, access, 'routing_plans', params.id, 'routing plan');
      return { data: (await present(deps.db, env, [row], query))[0] };
    },
  }),
];
