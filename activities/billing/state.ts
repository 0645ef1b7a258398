import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import type { Db } from '../../db/knex';
import type { Environment } from '../../db/environments';
import { findSubscription, type SubscriptionRow } from '../../db/subscriptions';
import { openInvoicesOf, type InvoiceRow } from '../../db/invoices';
import type { EventRecord } from '../../db/events';
import type { Config } from '../../lib/config';
import { logger } from '../../lib/logger';
import type { Vault } from '../../lib/vault';
import { serializeInvoice } from '../../resources/invoices';
import { serializeSubscription } from '../../resources/subscriptions';
import { subscriptionWorkflowId, type Collecting, type SubscriptionClock, type SubscriptionRef } from '../../contracts/billing';
import { UNSEALED_COMMAND } from '../../contracts/payments';

export interface BillingActivityDeps {
  db: Db;
  config: Config;
  vault: Vault;
  /** A Temporal client for the invoices' payments. Optional: inside a worker the activity uses the worker's own. */
  temporal?: () => Promise<Client>;
}

/** The Temporal client an activity calls with: the one the deps give, else the worker's own. */
export const temporalOf = async (deps: BillingActivityDeps): Promise<Client> => (deps.temporal ? deps.temporal() : Context.current().client);

/** The statuses of a payment still being decided: its invoice waits for the payment's word. */
export const UNDECIDED_PAYMENT_STATUSES = ['CREATED', 'PROCESSING', 'REQUIRES_ACTION', 'REQUIRES_PAYMENT_METHOD'];

const ms = (date: Date | null) => (date === null ? null : new Date(date).getTime());

/** The invoice the workflow collects next: one whose payment is under way, else the OPEN one due first. */
function collectingOf(open: InvoiceRow[]): Collecting | null {
  const waiting = open.find((inv) => UNDECIDED_PAYMENT_STATUSES.includes(inv.attempts.at(-1)?.status ?? ''));
  const due = waiting ?? open.filter((inv) => inv.next_payment_attempt !== null)
    .sort((a, b) => ms(a.next_payment_attempt)! - ms(b.next_payment_attempt)!)[0];
  if (!due) return null;
  return {
    invoiceId: due.id, attemptCount: due.attempt_count, nextAttemptAt: waiting ? null : ms(due.next_payment_attempt),
    paymentId: due.payment_id, waiting: Boolean(waiting),
  };
}

/** The workflow's view of the row (SubscriptionClock), with the events the step wrote to fan out. */
export async function clockOf(db: Knex, env: Environment, row: SubscriptionRow): Promise<SubscriptionClock> {
  const open = await openInvoicesOf(db, env, row.id);
  return {
    status: row.status,
    currentPeriodEnd: ms(row.current_period_end)!,
    trialEnd: ms(row.trial_end),
    cancelAtPeriodEnd: row.cancel_at_period_end,
    paused: row.pause_collection !== null,
    resumesAt: row.pause_collection?.resumes_at ? Date.parse(row.pause_collection.resumes_at) : null,
    // An INCOMPLETE subscription's first period starts when it was made (on its clock's time, for a test clock).
    createdAt: ms(row.current_period_start)!,
    testClockId: row.test_clock_id,
    collecting: collectingOf(open),
    noticesSent: row.notices_sent ?? [],
  };
}

/** The row's clock, read afresh; a subscription with no row is a workflow started by someone else (refused). */
export async function readClock(db: Knex, ref: SubscriptionRef): Promise<SubscriptionClock> {
  const row = await findSubscription(db, ref.environment, ref.subscriptionId);
  if (!row || row.account_id !== ref.accountId) throw ApplicationFailure.nonRetryable('the subscription has no row in this account', 'not_found');
  return clockOf(db, ref.environment, row);
}

/** Refuses a billing command for good (`unsealed_command`): logged without the seal; nothing written or charged. */
export function refuseBillingCommand(ref: Pick<SubscriptionRef, 'environment' | 'subscriptionId'>, why: string): never {
  logger.warn({ environment: ref.environment, subscription_id: ref.subscriptionId.slice(0, 64), why }, 'billing command refused');
  throw ApplicationFailure.nonRetryable(`the subscription's command was refused: ${why}`, UNSEALED_COMMAND);
}

/** Whether the running activity belongs to the subscription's own workflow (true outside one: a test calling it directly). */
export function inOwnWorkflow(subscriptionId: string): boolean {
  try {
    return Context.current().info.workflowExecution?.workflowId === subscriptionWorkflowId(subscriptionId);
  } catch {
    return true;
  }
}

/** An event about a subscription, its data the subscription as the API shows it. */
export function subscriptionEvent(ref: SubscriptionRef, event: string, row: SubscriptionRow, config: Config): EventRecord {
  return record(ref, event, 'subscription', row.id, { object: serializeSubscription(row, config) });
}

/** An event about an invoice, its data the invoice as the API shows it. */
export function invoiceEvent(ref: SubscriptionRef, event: string, row: InvoiceRow, extra: Record<string, unknown> = {}): EventRecord {
  return { ...record(ref, event, 'invoice', row.id, { object: serializeInvoice(row), ...extra }), ...(row.payment_id ? { paymentId: row.payment_id } : {}) };
}

function record(ref: SubscriptionRef, event: string, subjectType: string, subjectId: string, data: Record<string, unknown>): EventRecord {
  const { actor } = ref.context;
  return {
    event, accountId: ref.accountId, workspaceId: ref.workspaceId, subjectType, subjectId, data,
    actorType: actor.type, actorId: actor.id, apiKeyId: actor.apiKeyId, requestId: ref.context.requestId, traceId: ref.context.traceId, spanId: ref.context.spanId,
  };
}
