import { Type } from '@sinclair/typebox';
import type { Environment } from '../../db/environments';
import type { Db } from '../../db/knex';
import { chargesOfPayments, findPayments } from '../../db/payments';
import { findRoutingPlan, listRoutingPlans, RoutingPlanRow } from '../../db/routing-plans';
import { groupBy } from '../../lib/group-by';
import { ChargeSchema, PaymentSchema, serializeCharge, serializePayment } from '../../resources/payments';
import { AttemptSchema, RoutingPlanSchema, serializeAttempt, serializeRoutingPlan } from '../../resources/routing-plans';
import type { Access, AccountScope } from '../auth/access';
import { defineRoute } from '../route';
import { MAX_PAGE, Obj } from '../../resources/schemas';
import { findVisible } from './environment-lookup';

const Includes = {
  include_charges: Type.Optional(Type.Boolean({ default: true, description: 'embed the charges (attempts) made under the plan' })),
  include_payment: Type.Optional(Type.Boolean({ default: true, description: 'embed the payment' })),
  include_attempts: Type.Optional(Type.Boolean({
    default: false,
    description: 'embed `attempts`: one compact line per charge, with the index of the candidate it tried',
  })),
};

interface IncludeFlags { include_charges?: boolean; include_payment?: boolean; include_attempts?: boolean }

/** A plan as these routes answer it: the plan resource with the embeds the flags ask for. */
const RoutingPlanWithEmbedsSchema = Type.Composite([RoutingPlanSchema, Type.Object({
  charges: Type.Optional(Type.Array(ChargeSchema)),
  attempts: Type.Optional(Type.Array(AttemptSchema)),
  payment: Type.Optional(Type.Union([PaymentSchema, Type.Null()])),
})], { additionalProperties: true });

/**
 * Plans as responses, with what the flags ask for. Plans come "with charges and payment embedded"
 * (docs/providers-and-routing.md#routing-plans-the-api), so those two are on unless turned off. Two
 * queries for any number of plans.
 */
async function present(db: Db, env: Environment, plans: RoutingPlanRow[], flags: IncludeFlags) {
  const withCharges = flags.include_charges ?? true;
  const withPayment = flags.include_payment ?? true;
  const withAttempts = flags.include_attempts ?? false;
  const paymentIds = [...new Set(plans.map((p) => p.payment_id))];
  const charges = withCharges || withAttempts ? await chargesOfPayments(db, env, paymentIds) : [];
  const payments = withPayment ? await findPayments(db, env, paymentIds) : [];
  // A payment's charges are those of all its plans: each plan shows its own, in attempt order.
  const chargesByPlan = groupBy(charges.filter((c) => c.routing_plan_id !== null).sort((a, b) => a.attempt_no - b.attempt_no), 'routing_plan_id');
  const paymentsById = new Map(payments.map((p) => [p.id, p]));
  return plans.map((plan) => {
    const planCharges = chargesByPlan.get(plan.id) ?? [];
    const payment = paymentsById.get(plan.payment_id);
    return {
      ...serializeRoutingPlan(plan),
      ...(withCharges ? { charges: planCharges.map(serializeCharge) } : {}),
      ...(withAttempts ? { attempts: planCharges.map((charge) => serializeAttempt(plan, charge)) } : {}),
      ...(withPayment ? { payment: payment ? serializePayment(payment) : null } : {}),
    };
  });
}

/**
 * The embeds a caller may have: charges, attempts and the payment are payment data, so they need
 * `payment:read` beside the route's `routing:read`. Asked for explicitly without it: 403 naming it; left
 * at their default: not embedded, so a routing-only key still reads its plans.
 */
function allowedIncludes(access: Access, scope: Pick<AccountScope, 'permissions'>, flags: IncludeFlags): IncludeFlags {
  const mayReadPayments = scope.permissions.has('payment:read');
  for (const flag of ['include_charges', 'include_payment', 'include_attempts'] as const) {
    if (flags[flag] === true && !mayReadPayments) access.require(scope, 'payment:read', `query/${flag}`);
  }
  return mayReadPayments ? flags : { include_charges: false, include_payment: false, include_attempts: false };
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
      page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, description: 'with limit: that page; without either, the full list' })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'page size (default 10 when page is given)' })),
    }),
    response: Type.Array(RoutingPlanWithEmbedsSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const flags = allowedIncludes(access, scope, query);
      const env = scope.environment;
      const plans = await listRoutingPlans(deps.db, env, scope.account.id, { paymentId: query.payment_id, page: query.page, limit: query.limit });
      return { data: await present(deps.db, env, plans, flags) };
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
    response: RoutingPlanWithEmbedsSchema,
    async handler({ params, query, access, deps }) {
      const { row, env, scope } = await findVisible(access, 'routing plan', (e) => findRoutingPlan(deps.db, e, params.id));
      return { data: (await present(deps.db, env, [row], allowedIncludes(access, scope, query)))[0] };
    },
  }),
];
