import type { Knex } from 'knex';
import { addressesByCustomer, customersByIds } from '../../db/customers';
import { disputesOfPayments } from '../../db/disputes';
import type { Environment } from '../../db/environments';
import { eventsOfPayments } from '../../db/events';
import { cardDisplay } from '../../db/payment-methods';
import {
  chargesOfPayments, readPayment, type AnsweredCharge, type AnsweredPayment, type ChargeDisputes, type PaymentRow, type ReadPayment, type ShownPayment,
} from '../../db/payments';
import { routingPlansOfPayments } from '../../db/routing-plans';
import { groupBy } from '../../lib/group-by';
import type { Config } from '../../lib/config';
import { paymentWorkflowLink } from '../../workflows/payments/client';
import type { Access, AccountScope } from '../auth/access';
import type { Permission } from '../auth/permissions';
import { serializeCustomer } from '../../resources/customers';
import { serializeEvent } from '../../resources/events';
import {
  serializeCheckoutPayment, serializePayment, withDispute, type CheckoutPayment, type DisputedAmount, type Payment,
} from '../../resources/payments';
import { serializeRoutingPlan } from '../../resources/routing-plans';

/** What a payment read embeds (the `include_*` query flags). */
export interface PaymentIncludes {
  include_charges?: boolean;
  include_routing_plans?: boolean;
  include_events?: boolean;
  include_customer?: boolean;
}

/**
 * The permission each embed needs: the read permission of the resource it shows. Charges are the
 * payment's own attempts (no route reads them apart from their payment), so payment:read covers them.
 */
const INCLUDE_PERMISSIONS: Record<keyof PaymentIncludes, Permission> = {
  include_charges: 'payment:read',
  include_customer: 'customer:read',
  include_events: 'event:read',
  include_routing_plans: 'routing:read',
};

/** Refuses a payment read whose embeds ask for more than the caller may read on `scope`'s account (403). */
export function requireIncludes(access: Access, scope: Pick<AccountScope, 'permissions'>, flags: PaymentIncludes): void {
  for (const [flag, permission] of Object.entries(INCLUDE_PERMISSIONS) as [keyof PaymentIncludes, Permission][]) {
    if (flags[flag]) access.require(scope, permission, `query/${flag}`);
  }
}

/** The disputes of some payments, each over its charges, and of each charge (by id). */
interface PageDisputes { byPayment: Map<string, DisputedAmount>; byCharge: ReadonlyMap<string, DisputedAmount> }

const NO_DISPUTES: PageDisputes = { byPayment: new Map(), byCharge: new Map() };

/**
 * The disputes of a page of payments: read with the payment when it was read alone (readPayment), else
 * in one query. Only a payment that received money can be disputed, so a page without one (most answers
 * to a create or a confirm, failed and uncaptured payments) reads nothing.
 */
async function pageDisputes(db: Knex, env: Environment, rows: (ShownPayment | ReadPayment)[]): Promise<PageDisputes> {
  const received = rows.filter((r) => Number(r.amount_received ?? 0) > 0);
  if (!received.length) return NO_DISPUTES;
  const read = received.map((r) => ('disputes' in r ? r.disputes : undefined));
  const amounts = read.every((d) => d !== undefined) ? read.flat() as ChargeDisputes[] : await disputesOfPayments(db, env, received.map((r) => r.id));
  const byCharge = new Map(amounts.map((a) => [a.charge_id, { disputed: true, amount: Number(a.amount) }]));
  const byPayment = new Map<string, DisputedAmount>();
  for (const a of amounts) byPayment.set(a.payment_id, { disputed: true, amount: (byPayment.get(a.payment_id)?.amount ?? 0) + Number(a.amount) });
  return { byPayment, byCharge };
}

/** The charges of a page of payments: read with the payment when it was read alone with them (readPayment), else in one query. */
async function chargesOf(db: Knex, env: Environment, rows: (ShownPayment | ReadPayment)[]): Promise<AnsweredCharge[]> {
  const read = rows.map((r) => ('charges' in r ? r.charges : undefined));
  return read.every((c) => c !== undefined) ? read.flat() as AnsweredCharge[] : chargesOfPayments(db, env, rows.map((r) => r.id));
}

/**
 * Payments as responses with what the include flags ask for, and their disputes: one query per embedded
 * kind, whatever the number of payments (no query per row).
 */
export async function presentPayments(
  db: Knex, env: Environment, rows: ShownPayment[], flags: PaymentIncludes, readDisputes = true,
): Promise<Payment[]> {
  if (!rows.length) return [];
  if (!flags.include_charges && !flags.include_routing_plans && !flags.include_events && !flags.include_customer) {
    if (!readDisputes) return rows.map((row) => serializePayment(row));
    const { byPayment } = await pageDisputes(db, env, rows);
    return rows.map((row) => withDispute(serializePayment(row), byPayment.get(row.id)));
  }
  const ids = rows.map((r) => r.id);
  const customerIds = [...new Set(rows.map((r) => r.customer_id).filter((c): c is string => !!c))];
  const withCustomers = flags.include_customer && customerIds.length > 0;
  const [charges, plans, events, customers, addresses] = await Promise.all([
    flags.include_charges ? chargesOf(db, env, rows) : undefined,
    flags.include_routing_plans ? routingPlansOfPayments(db, env, ids) : [],
    flags.include_events ? eventsOfPayments(db, env, ids) : [],
    withCustomers ? customersByIds(db, env, customerIds) : [],
    withCustomers ? addressesByCustomer(db, env, customerIds) : undefined,
  ]);
  const disputes = readDisputes ? await pageDisputes(db, env, rows) : NO_DISPUTES;
  const chargesBy = groupBy(charges ?? [], 'payment_id');
  const plansBy = groupBy(plans, 'payment_id');
  const eventsBy = groupBy(events, 'payment_id');
  const customersById = new Map(customers.map((c) => [c.id, c]));
  return rows.map((row) => {
    const customer = row.customer_id ? customersById.get(row.customer_id) : undefined;
    return serializePayment(row, {
      dispute: disputes.byPayment.get(row.id),
      chargeDisputes: disputes.byCharge,
      ...(flags.include_charges ? { charges: chargesBy.get(row.id) ?? [] } : {}),
      ...(flags.include_routing_plans ? { routing_plans: (plansBy.get(row.id) ?? []).map(serializeRoutingPlan) } : {}),
      ...(flags.include_events ? { events: (eventsBy.get(row.id) ?? []).map(serializeEvent) } : {}),
      ...(flags.include_customer ? { customer: customer ? serializeCustomer(customer, addresses?.get(customer.id) ?? []) : null } : {}),
    });
  });
}

/** A payment as a publishable key sees it, with its card's network and last4 (see serializeCheckoutPayment). */
export async function presentCheckoutPayment(db: Knex, env: Environment, row: PaymentRow | AnsweredPayment): Promise<CheckoutPayment> {
  const card = row.payment_method_id ? await cardDisplay(db, env, row.account_id, row.payment_method_id) : undefined;
  return serializeCheckoutPayment(row, card ?? null);
}

/**
 * One payment as GET and the commands answer it (to a secret key or a user): read afresh (or as the caller
 * has just read it), with the embeds asked for, its disputes, its client_secret and its workflow link.
 * `disputes: false` where the payment cannot have one (it was made or first confirmed by this request).
 */
export async function respondWithPayment(
  deps: { db: Knex; config: Config }, env: Environment, id: string, flags: PaymentIncludes, read?: ReadPayment,
  options: { disputes?: boolean } = {},
): Promise<Payment> {
  const row = read ?? await readPayment(deps.db, env, id, { withCharges: !!flags.include_charges });
  if (!row) throw new Error(`payment ${id} is missing`);
  const [payment] = await presentPayments(deps.db, env, [row], flags, options.disputes ?? true);
  payment.client_secret = row.client_secret;
  payment.temporal = paymentWorkflowLink(deps.config, id);
  return payment;
}
