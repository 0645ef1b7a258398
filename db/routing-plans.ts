// The store of routing plans (docs/providers-and-routing.md#routing-plan): the only module that queries
// routing_plans. A plan is written once by the confirm walk; afterwards only its current index moves.

import type { Knex } from 'knex';
import type { Candidate, IneligibleConfig, RoutingHints } from '../lib/routing/plan';
import { envTable, Environment } from './environments';
import { insertIfFirstWrote } from './knex';
import { PAYMENT_WRITTEN } from './payment-rows';

/** What the walk keeps beside the candidates: why the others are not, the hints, what it planned. */
export interface RoutingPlanMetadata {
  ineligible?: IneligibleConfig[];
  hints?: RoutingHints;
  /** The candidates as the payment workflow walks them (its contract's shape). */
  planned?: unknown[];
  payment_method_id?: string;
  [key: string]: unknown;
}

export interface RoutingPlanRow {
  id: string;
  account_id: string;
  payment_id: string;
  request_id: string | null;
  trace_id: string | null;
  /** The index in `candidates` of the attempt made last. */
  current_index: number;
  routing_origin: string;
  candidates: Candidate[];
  metadata: RoutingPlanMetadata;
  created_at: Date;
  updated_at: Date;
}

export type NewRoutingPlan = Pick<RoutingPlanRow, 'id' | 'account_id' | 'payment_id' | 'request_id' | 'trace_id' | 'candidates' | 'metadata'>;

const plans = (db: Knex, env: Environment) => db(envTable(env, 'routing_plans'));

export async function findRoutingPlan(db: Knex, env: Environment, id: string): Promise<RoutingPlanRow | undefined> {
  return plans(db, env).where({ id }).first();
}

/**
 * A plan's insert (idempotent on its id), not yet run: it goes in with the payment's write that moves the
 * payment to PROCESSING (Alongside, db/knex.ts).
 */
export function routingPlanInsert(db: Knex, env: Environment, plan: NewRoutingPlan): Knex.QueryBuilder {
  return plans(db, env)
    .insert({ ...plan, current_index: 0, candidates: JSON.stringify(plan.candidates), metadata: JSON.stringify(plan.metadata) })
    .onConflict('id').ignore();
}

/**
 * A payment's first plan made with its row (a create that carries a confirm), not yet run: written only
 * if the statement writes the payment's row (insertIfFirstWrote, db/knex.ts), so never beside a row found written.
 */
export function routingPlanInsertWithPayment(db: Knex, env: Environment, plan: NewRoutingPlan): Knex.QueryBuilder {
  return insertIfFirstWrote(db, envTable(env, 'routing_plans'), [{ ...plan, current_index: 0 }], PAYMENT_WRITTEN);
}

export async function setRoutingPlanIndex(db: Knex, env: Environment, id: string, currentIndex: number): Promise<void> {
  await plans(db, env).where({ id }).update({ current_index: currentIndex, updated_at: new Date() });
}

/** The plans of some payments, oldest first (payments embed them). */
export async function routingPlansOfPayments(db: Knex, env: Environment, paymentIds: string[]): Promise<RoutingPlanRow[]> {
  return paymentIds.length ? plans(db, env).whereIn('payment_id', paymentIds).orderBy('created_at').orderBy('id') : [];
}

/** A payment's newest plan (the operators' view of a payment). */
export async function latestRoutingPlanOf(db: Knex, env: Environment, paymentId: string): Promise<RoutingPlanRow | undefined> {
  return plans(db, env).where({ payment_id: paymentId }).orderBy('created_at', 'desc').first();
}

export interface RoutingPlanFilter {
  paymentId?: string;
  /** With limit: that page. Without page or limit, the full list. */
  page?: number;
  limit?: number;
}

/**
 * An account's plans, newest first. Pagination keys are accepted and the full list may be returned; we
 * page only when asked to (docs/providers-and-routing.md#routing-plans-the-api).
 */
export async function listRoutingPlans(db: Knex, env: Environment, accountId: string, filter: RoutingPlanFilter = {}): Promise<RoutingPlanRow[]> {
  const q = plans(db, env).where({ account_id: accountId }).orderBy('created_at', 'desc').orderBy('id', 'desc');
  if (filter.paymentId) q.where({ payment_id: filter.paymentId });
  if (filter.page !== undefined || filter.limit !== undefined) {
    const limit = filter.limit ?? 10;
    q.limit(limit).offset(((filter.page ?? 1) - 1) * limit);
  }
  return q;
}
