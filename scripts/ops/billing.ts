/** `npm run ops -- subscriptions:… / invoices:…`: one subscription's row, invoices and live workflow state; retry an invoice now. */
import { userInfo } from 'node:os';
import {
  BILLING_SEAL_PURPOSE, subscriptionChangeText, type SubscriptionChange, type SubscriptionClock, type SubscriptionState,
} from '../../contracts/billing';
import type { Environment } from '../../db/environments';
import { findInvoice, type InvoiceRow, listInvoices } from '../../db/invoices';
import { findSubscription, type SubscriptionRow } from '../../db/subscriptions';
import { ApiError } from '../../lib/errors';
import { newUlid } from '../../lib/ids';
import { Vault } from '../../lib/vault';
import { changeSubscription, subscriptionState, subscriptionWorkflowLink } from '../../workflows/billing/client';
import { isNotFound } from '../../workflows/client';
import {
  type Args, type Command, type Ctx, EXIT, failure, inEnvironments, iso, kv, money, notFound, onePositional, print, table, usage, withTimeout,
} from './shared';

export const BILLING_USAGE = `Billing
  subscriptions:show <sub_id>     the subscription's row, its invoices and its workflow's live state (and Temporal UI link)
  invoices:retry <in_id>          pay an OPEN invoice now through its subscription's workflow (as POST /v1/invoices/{id}/pay);
                                  exit 1 when refused (not OPEN, a payment under way) or when the retry is declined
`;

const INVOICES_SHOWN = 24;

/** The subscription's workflow: its live `state` query (5 s at most), or why there is none. */
interface Workflow { workflow_id: string; temporal_ui_url: string; state?: SubscriptionState; state_error?: string }

async function workflowOf(ctx: Ctx, id: string): Promise<Workflow> {
  const link = subscriptionWorkflowLink(ctx.config, id);
  const workflow: Workflow = {
    workflow_id: link.workflow_id, temporal_ui_url: link.ui_url,
  };
  try {
    workflow.state = await withTimeout(subscriptionState(await ctx.temporal(), id), 5000, 'the state query');
  } catch (err) {
    workflow.state_error = isNotFound(err) ? 'workflow not found' : (err as Error).message;
  }
  return workflow;
}

const epoch = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

async function subscriptionsShow(ctx: Ctx, args: Args): Promise<number> {
  const id = onePositional(args, 'subscription id');
  if (!/^sub_[0-9A-Za-z]+$/.test(id)) throw usage(`"${id}" is not a subscription id (sub_…)`);
  const found = await inEnvironments((env) => findSubscription(ctx.db(), env, id));
  if (!found) throw notFound(`No subscription ${id} (looked in live and sandbox).`);
  const { env, row } = found;
  const listed = await listInvoices(ctx.db(), env, row.account_id, { subscription_id: id }, { page: 1 }, INVOICES_SHOWN);
  const summary = summarize(row, env, listed?.rows ?? [], await workflowOf(ctx, id));
  print(ctx, summary, () => showText(summary));
  return EXIT.ok;
}

function summarize(row: SubscriptionRow, env: Environment, invoices: InvoiceRow[], workflow: Workflow) {
  return {
    subscription: {
      id: row.id, account_id: row.account_id, environment: env, status: row.status, customer_id: row.customer_id, items: row.items,
      currency: row.currency, interval: row.interval, interval_count: row.interval_count,
      current_period_start: iso(row.current_period_start), current_period_end: iso(row.current_period_end), trial_end: iso(row.trial_end),
      cancel_at_period_end: row.cancel_at_period_end, canceled_at: iso(row.canceled_at), ended_at: iso(row.ended_at),
      pause_collection: row.pause_collection, latest_invoice_id: row.latest_invoice_id, default_payment_method_id: row.default_payment_method_id,
      test_clock_id: row.test_clock_id, created_at: iso(row.created_at), updated_at: iso(row.updated_at),
    },
    invoices: invoices.map((i) => ({
      id: i.id, status: i.status, billing_reason: i.billing_reason, amount_due: Number(i.amount_due), amount_paid: Number(i.amount_paid),
      currency: i.currency, period_start: iso(i.period_start), period_end: iso(i.period_end), attempt_count: i.attempt_count,
      next_payment_attempt: iso(i.next_payment_attempt), payment_id: i.payment_id,
    })),
    workflow,
  };
}

function showText({ subscription: s, invoices, workflow }: ReturnType<typeof summarize>): string {
  const clock = workflow.state?.clock;
  const day = (t: string | null) => t?.slice(0, 10);
  return [
    `Subscription ${s.id}`,
    kv([
      ['status', s.status], ['account', `${s.account_id} (${s.environment})`], ['customer', s.customer_id],
      ['items', s.items.map((i) => `${i.quantity} × ${i.price_id}`).join(', ')],
      ['period', `${s.current_period_start} → ${s.current_period_end}`], ['trial end', s.trial_end],
      ['cancel at period end', s.cancel_at_period_end ? 'yes' : 'no'], ['paused', s.pause_collection ? JSON.stringify(s.pause_collection) : null],
      ['payment method', s.default_payment_method_id], ['test clock', s.test_clock_id], ['ended', s.ended_at],
    ]),
    '',
    `Invoices (${invoices.length}${invoices.length === INVOICES_SHOWN ? ', the newest' : ''})`,
    invoices.length
      ? table(['INVOICE', 'STATUS', 'AMOUNT DUE', 'PERIOD', 'ATTEMPTS', 'NEXT ATTEMPT', 'PAYMENT'], invoices.map((i) => [
        i.id, i.status, money(i.amount_due, i.currency), `${day(i.period_start)} → ${day(i.period_end)}`, i.attempt_count, i.next_payment_attempt, i.payment_id,
      ]))
      : '(none)',
    '',
    'Workflow',
    kv([
      ['id', workflow.workflow_id], ['ui', workflow.temporal_ui_url],
      ...(clock ? [
        ['state', clock.status], ['runs', workflow.state?.runs], ['now', epoch(workflow.state?.now)], ['period ends', epoch(clock.currentPeriodEnd)],
        ['collecting', clock.collecting ? collecting(clock.collecting) : null],
      ] as [string, unknown][] : [['state', workflow.state_error ?? 'not started yet'] as [string, unknown]]),
    ]),
  ].join('\n');
}

function collecting(c: NonNullable<SubscriptionClock['collecting']>): string {
  const next = c.nextAttemptAt ? `, next try ${epoch(c.nextAttemptAt)}` : '';
  return `${c.invoiceId} (${c.attemptCount} attempt${c.attemptCount === 1 ? '' : 's'}${next}${c.waiting ? ', waiting for its payment' : ''})`;
}

async function invoicesRetry(ctx: Ctx, args: Args): Promise<number> {
  const id = onePositional(args, 'invoice id');
  if (!/^in_[0-9A-Za-z]+$/.test(id)) throw usage(`"${id}" is not an invoice id (in_…)`);
  const found = await inEnvironments((env) => findInvoice(ctx.db(), env, id));
  if (!found) throw notFound(`No invoice ${id} (looked in live and sandbox).`);
  const { env, row } = found;
  const change: SubscriptionChange = { kind: 'pay_invoice', invoiceId: id };
  const updateId = `cmd_${newUlid()}`;
  try {
    // Sealed as the API seals a change: the worker moves no money on an unsealed command.
    const seal = new Vault(ctx.config.vaultKeys).seal(BILLING_SEAL_PURPOSE, subscriptionChangeText(row.subscription_id, updateId, change));
    const sealed = { change, seal, context: { actor: { type: 'system' as const, id: `ops:${operator()}` } } };
    await changeSubscription(await ctx.temporal(), row.subscription_id, sealed, updateId,
      async () => (await findSubscription(ctx.db(), env, row.subscription_id))?.status);
  } catch (err) {
    if (err instanceof ApiError && err.reason === 'invalid_state') throw failure(`Cannot retry ${id}: ${err.message}`);
    throw err;
  }
  const after = (await findInvoice(ctx.db(), env, id)) ?? row;
  const attempt = after.attempts.at(-1);
  const result = {
    invoice_id: id, subscription_id: after.subscription_id, status: after.status, attempt_count: after.attempt_count, payment_id: after.payment_id,
    payment_status: attempt?.status ?? null, decline_code: attempt?.decline_code ?? null, next_payment_attempt: iso(after.next_payment_attempt),
  };
  const declined = after.status === 'OPEN' && attempt?.decline_code != null;
  print(ctx, result, () => (after.status === 'PAID'
    ? `Invoice ${id} is PAID (payment ${after.payment_id}).`
    : `Invoice ${id} is ${after.status} after attempt ${after.attempt_count}: payment ${after.payment_id ?? '-'} ${attempt?.status ?? ''}${attempt?.decline_code ? ` (${attempt.decline_code})` : ''}.`));
  return declined ? EXIT.failure : EXIT.ok;
}

function operator(): string {
  try {
    return userInfo().username;
  } catch {
    return 'cli';
  }
}

export const billingCommands: Record<string, Command> = {
  'subscriptions:show': subscriptionsShow,
  'invoices:retry': invoicesRetry,
};
