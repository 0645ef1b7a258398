import type { Knex } from 'knex';
import { envTable, Environment } from '../environments';
import { serializeCustomer } from '../serialize';
import { serializeEvent } from '../../api/resources/events';
import { serializeCheckoutPayment, serializePayment } from '../../api/resources/payments';
import { groupBy } from '../../lib/group-by';
import { addressesByCustomer } from './customers';

export interface PaymentIncludes {
  include_charges?: boolean;
  include_routing_plans?: boolean;
  include_events?: boolean;
  include_customer?: boolean;
}

/**
 * Payments as responses with what the include flags ask for: one query per embedded kind, whatever
 * the number of payments (no query per row).
 */
export async function presentPayments(db: Knex, env: Environment, rows: any[], flags: PaymentIncludes): Promise<Record<string, unknown>[]> {
  if (!rows.length) return [];
  const ids = rows.map((r) => r.id as string);
  const customerIds = [...new Set(rows.map((r) => r.customer_id as string | null).filter((c): c is string => !!c))];
  const [charges, plans, events, customers, addresses] = await Promise.all([
    flags.include_charges ? db(envTable(env, 'charges')).whereIn('payment_id', ids).orderBy('created_at').orderBy('attempt_no') : [],
    flags.include_routing_plans ? db(envTable(env, 'routing_plans')).whereIn('payment_id', ids).orderBy('created_at').orderBy('id') : [],
    flags.include_events ? db(envTable(env, 'events')).whereIn('payment_id', ids).orderBy('created_at').orderBy('id') : [],
    flags.include_customer && customerIds.length ? db(envTable(env, 'customers')).whereIn('id', customerIds) : [],
    flags.include_customer && customerIds.length ? addressesByCustomer(db, env, customerIds) : new Map<string, any[]>(),
  ]);
  const chargesBy = groupBy(charges as any[], 'payment_id');
  const plansBy = groupBy(plans as any[], 'payment_id');
  const eventsBy = groupBy(events as any[], 'payment_id');
  const customersById = new Map((customers as any[]).map((c) => [c.id as string, c]));
  return rows.map((row) => serializePayment(row, {
    ...(flags.include_charges ? { charges: chargesBy.get(row.id) ?? [] } : {}),
    ...(flags.include_routing_plans ? { routing_plans: plansBy.get(row.id) ?? [] } : {}),
    ...(flags.include_events ? { events: (eventsBy.get(row.id) ?? []).map(serializeEvent) } : {}),
    ...(flags.include_customer
      ? { customer: row.customer_id && customersById.has(row.customer_id)
        ? serializeCustomer(customersById.get(row.customer_id), (addresses as Map<string, any[]>).get(row.customer_id) ?? [])
        : null }
      : {}),
  }));
}

/** A payment as a publishable key sees it, with its card's network and last4 (see serializeCheckoutPayment). */
export async function presentCheckoutPayment(db: Knex, env: Environment, row: any): Promise<Record<string, unknown>> {
  const card = row.payment_method_id
    ? await db(envTable(env, 'payment_methods')).where({ id: row.payment_method_id, account_id: row.account_id }).first('card_network', 'card_last4')
    : undefined;
  return serializeCheckoutPayment(row, card ?? null);
}
