/** `npm run ops -- payments:…`: stuck payments, one payment's row and live workflow state, cancel. */
import { userInfo } from 'node:os';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import ms from 'ms';
import { envTable, type Environment } from '../../db/environments';
import { temporalUiLink } from '../../workflows/client';
import { paymentQueries, paymentUpdates, paymentWorkflowId, SEARCH_ATTRIBUTES, type PaymentState } from '../../workflows/shared';
import {
  age, type Args, type Command, type Ctx, EXIT, failure, findInEnvironments, iso, kv, money, notFound, onePositional,
  parseDuration, parseLimit, print, table, usage, withTimeout,
} from './shared';

export const PAYMENTS_USAGE = `Payments
  payments:stuck [--older-than 5m] [--account acct_…] [--limit 100]
                                  payments in PROCESSING (Temporal: PaymentStatus="PROCESSING")
  payments:show <pay_id>          the payment row, its charges and its workflow's live state
  payments:cancel <pay_id> [--reason requested_by_customer]
                                  cancel through the payment workflow (CREATED, FAILED, AUTHORIZED)
`;

async function findPayment(ctx: Ctx, id: string) {
  if (!/^pay_[0-9A-Za-z]+$/.test(id)) throw usage(`"${id}" is not a payment id (pay_…)`);
  const found = await findInEnvironments(ctx.db(), 'payments', id);
  if (!found) throw notFound(`No payment ${id} (looked in live and sandbox).`);
  return found;
}

/** Visibility finds the workflows; Postgres has the row. Age: since the row last changed (else the workflow start). */
async function paymentsStuck(ctx: Ctx, args: Args): Promise<number> {
  if (args.positionals.length) throw usage('payments:stuck takes no positional arguments');
  const olderThan = parseDuration('--older-than', args.values['older-than'] as string | undefined) ?? 0;
  const limit = parseLimit(args.values.limit as string | undefined, 100);
  const account = args.values.account as string | undefined;
  if (account !== undefined && !/^acct_[0-9A-Za-z]+$/.test(account)) throw usage(`--account takes an account id (acct_…), got "${account}"`);
  const client = await ctx.temporal();
  const query = `PaymentStatus="PROCESSING" AND ExecutionStatus="Running"${account ? ` AND AccountId="${account}"` : ''}`;
  const now = Date.now();
  const found: Record<string, unknown>[] = [];
  let seen = 0;
  for await (const wf of client.workflow.list({ query })) {
    if (++seen > limit * 5) break;
    const paymentId = wf.typedSearchAttributes.get(SEARCH_ATTRIBUTES.PaymentId) ?? wf.workflowId.replace(/^payment\//, '');
    const envAttr = wf.typedSearchAttributes.get(SEARCH_ATTRIBUTES.Environment) as Environment | undefined;
    const row = envAttr
      ? await ctx.db()(envTable(envAttr, 'payments')).where({ id: paymentId }).first()
      : (await findInEnvironments(ctx.db(), 'payments', paymentId))?.row;
    const since = row?.updated_at ? new Date(row.updated_at) : wf.startTime;
    if (now - since.getTime() < olderThan) continue;
    found.push({
      payment_id: paymentId,
      account_id: row?.account_id ?? wf.typedSearchAttributes.get(SEARCH_ATTRIBUTES.AccountId) ?? null,
      environment: envAttr ?? null,
      amount: row ? Number(row.amount) : null,
      currency: row?.currency ?? null,
      status: row?.status ?? null,
      updated_at: iso(row?.updated_at),
      workflow_started_at: iso(wf.startTime),
      age_seconds: Math.round((now - since.getTime()) / 1000),
      provider_config_id: wf.typedSearchAttributes.get(SEARCH_ATTRIBUTES.ProviderConfigId) ?? null,
      workflow_id: wf.workflowId,
      temporal_ui_url: temporalUiLink(ctx.config, wf.workflowId),
    });
    if (found.length >= limit) break;
  }
  found.sort((a, b) => Number(b.age_seconds) - Number(a.age_seconds));
  print(ctx, found, () => {
    if (!found.length) return `No payment has been PROCESSING${olderThan ? ` for more than ${ms(olderThan)}` : ''}.`;
    return [
      table(['PAYMENT', 'ACCOUNT', 'ENV', 'AMOUNT', 'DB STATUS', 'STUCK FOR', 'PROVIDER CONFIG'], found.map((p) => [
        p.payment_id as string, p.account_id as string, p.environment as string,
        p.amount !== null ? money(p.amount as number, p.currency as string) : null, p.status as string,
        age(Number(p.age_seconds) * 1000), p.provider_config_id as string,
      ])),
      '',
      `${found.length} payment${found.length === 1 ? '' : 's'} in PROCESSING. Next: npm run ops -- payments:show <id>, or open the workflow in the Temporal UI:`,
      ...found.map((p) => `  ${p.temporal_ui_url}`),
    ].join('\n');
  });
  return EXIT.ok;
}

async function paymentsShow(ctx: Ctx, args: Args): Promise<number> {
  const id = onePositional(args, 'payment id');
  const { env, row } = await findPayment(ctx, id);
  const db = ctx.db();
  const charges = await db(envTable(env, 'charges')).where({ payment_id: id }).orderBy('attempt_no');
  const plan = await db(envTable(env, 'routing_plans')).where({ payment_id: id }).orderBy('created_at', 'desc').first();
  const workflowId = paymentWorkflowId(id);
  const workflow: Record<string, unknown> = { workflow_id: workflowId, temporal_ui_url: temporalUiLink(ctx.config, workflowId) };
  try {
    const handle = (await ctx.temporal()).workflow.getHandle(workflowId);
    const description = await handle.describe();
    workflow.status = description.status.name;
    workflow.started_at = iso(description.startTime);
    workflow.closed_at = iso(description.closeTime);
    try {
      workflow.state = await withTimeout(handle.query(paymentQueries.state), 5000, 'the state query');
    } catch (err) {
      workflow.state_error = (err as Error).message;
    }
  } catch (err) {
    workflow.error = err instanceof WorkflowNotFoundError ? 'workflow not found' : (err as Error).message;
  }
  const summary = {
    payment: {
      id: row.id, account_id: row.account_id, environment: env, status: row.status, amount: Number(row.amount), currency: row.currency,
      auto_capture: row.auto_capture, last_error: row.last_error ?? null, cancellation_reason: row.cancellation_reason ?? null,
      created_at: iso(row.created_at), updated_at: iso(row.updated_at),
    },
    charges: charges.map((c: any) => ({
      id: c.id, attempt_no: c.attempt_no, status: c.status, payment_provider_config_id: c.payment_provider_config_id,
      provider_config_name: c.payment_provider_config_snapshot?.name ?? null, decline_code: c.decline_code ?? null,
      duration_ms: c.performance?.duration ?? null, provider_reference: c.provider_reference ?? null, created_at: iso(c.created_at),
    })),
    routing_plan: plan ? { id: plan.id, current_index: plan.current_index, candidates: plan.candidates } : null,
    workflow,
  };
  print(ctx, summary, () => {
    const state = workflow.state as PaymentState | undefined;
    const current = state?.currentIndex !== undefined ? state.candidates[state.currentIndex] : undefined;
    return [
      `Payment ${row.id}`,
      kv([
        ['status', row.status], ['amount', money(row.amount, row.currency)], ['account', `${row.account_id} (${env})`],
        ['created', iso(row.created_at)], ['updated', `${iso(row.updated_at)} (${age(Date.now() - new Date(row.updated_at).getTime())} ago)`],
        ['last error', row.last_error ? JSON.stringify(row.last_error) : null],
      ]),
      '',
      `Charges (${charges.length})`,
      charges.length
        ? table(['ATTEMPT', 'CHARGE', 'STATUS', 'PROVIDER CONFIG', 'DECLINE', 'DURATION'], summary.charges.map((c) => [
          `#${c.attempt_no}`, c.id, c.status, `${c.provider_config_name ?? ''} ${c.payment_provider_config_id ?? ''}`.trim(), c.decline_code,
          c.duration_ms !== null ? `${c.duration_ms} ms` : null,
        ]))
        : '(none)',
      '',
      'Workflow',
      kv([
        ['id', workflowId], ['status', workflow.status ?? workflow.error], ['ui', workflow.temporal_ui_url],
        ...(state ? [
          ['state', state.status], ['reconciling', state.reconciling ? 'yes: an unknown provider outcome is being reconciled' : 'no'],
          ['candidate', current ? `${state.currentIndex! + 1}/${state.candidates.length} ${current.providerConfigId}` : null],
          ['attempts', state.attempts.map((a) => `#${a.attemptNo} ${a.outcome}${a.declineCode ? ` (${a.declineCode})` : ''}`).join(', ')],
          ['last error', state.lastError ? state.lastError.code : null],
        ] as [string, unknown][] : workflow.state_error ? [['state', workflow.state_error] as [string, unknown]] : []),
      ]),
    ].join('\n');
  });
  return EXIT.ok;
}

async function paymentsCancel(ctx: Ctx, args: Args): Promise<number> {
  const id = onePositional(args, 'payment id');
  const reason = (args.values.reason as string | undefined) ?? 'requested_by_customer';
  const { row } = await findPayment(ctx, id);
  const client = await ctx.temporal();
  let result;
  try {
    result = await client.workflow.getHandle(paymentWorkflowId(id)).executeUpdate(paymentUpdates.cancel, {
      args: [{ reason, context: { actor: { type: 'system', id: `ops:${operator()}` } } }],
    });
  } catch (err) {
    const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.type === 'invalid_state') throw failure(`Cannot cancel ${id}: ${cause.message}`);
    if (err instanceof WorkflowNotFoundError || /already completed|not found/i.test(String((err as Error)?.message))) {
      throw failure(`Cannot cancel ${id}: its workflow has finished (the payment is ${row.status}).`);
    }
    throw err;
  }
  print(ctx, { payment_id: id, status: result.status }, () => `Payment ${id} is ${result.status}.`);
  return EXIT.ok;
}

function operator(): string {
  try {
    return userInfo().username;
  } catch {
    return 'cli';
  }
}

export const paymentCommands: Record<string, Command> = {
  'payments:stuck': paymentsStuck,
  'payments:show': paymentsShow,
  'payments:cancel': paymentsCancel,
};
