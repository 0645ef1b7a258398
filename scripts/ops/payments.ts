/** `npm run ops -- payments:…`: stuck payments, payments needing attention, one payment's row and live workflow state, cancel. */
import { userInfo } from 'node:os';
import ms from 'ms';
import { chargesOfPayments, findPayment, needingAttention } from '../../db/payments';
import { latestRoutingPlanOf } from '../../db/routing-plans';
import { ApiError } from '../../lib/errors';
import { Vault } from '../../lib/vault';
import { isNotFound, temporalUiLink } from '../../workflows/client';
import {
  cancelPayment, describePayment, paymentState, paymentWorkflowLink, PaymentWorkflowClosedError, processingPaymentWorkflows,
} from '../../workflows/payments/client';
import { PAYMENT_SEAL_PURPOSE, paymentCommand, type PaymentState } from '../../contracts/payments';
import {
  age, type Args, type Command, type Ctx, ENVIRONMENTS, EXIT, failure, inEnvironments, iso, kv, money, notFound, onePositional, option,
  parseDuration, parseLimit, print, table, usage, withTimeout,
} from './shared';

export const PAYMENTS_USAGE = `Payments
  payments:stuck [--older-than 5m] [--account acct_…] [--limit 100]
                                  payments in PROCESSING (Temporal: PaymentStatus="PROCESSING")
  payments:attention [--account acct_…] [--limit 100]
                                  payments whose workflow stopped on a write the database refuses (needs_attention)
  payments:show <pay_id>          the payment row, its charges and its workflow's live state
  payments:cancel <pay_id> [--reason requested_by_customer]
                                  cancel through the payment workflow (CREATED, FAILED, AUTHORIZED)
`;

async function findPaymentOrFail(ctx: Ctx, id: string) {
  if (!/^pay_[0-9A-Za-z]+$/.test(id)) throw usage(`"${id}" is not a payment id (pay_…)`);
  const found = await inEnvironments((env) => findPayment(ctx.db(), env, id));
  if (!found) throw notFound(`No payment ${id} (looked in live and sandbox).`);
  return found;
}

/** Visibility finds the workflows; Postgres has the row. Age: since the row last changed (else the workflow start). */
async function paymentsStuck(ctx: Ctx, args: Args): Promise<number> {
  if (args.positionals.length) throw usage('payments:stuck takes no positional arguments');
  const olderThan = parseDuration('--older-than', option(args, 'older-than')) ?? 0;
  const limit = parseLimit(option(args, 'limit'), 100);
  const account = option(args, 'account');
  if (account !== undefined && !/^acct_[0-9A-Za-z]+$/.test(account)) throw usage(`--account takes an account id (acct_…), got "${account}"`);
  const client = await ctx.temporal();
  const now = Date.now();
  const found: Record<string, unknown>[] = [];
  for await (const wf of processingPaymentWorkflows(client, { accountId: account, max: limit * 5 })) {
    const row = wf.environment ? await findPayment(ctx.db(), wf.environment, wf.paymentId) : (await inEnvironments((env) => findPayment(ctx.db(), env, wf.paymentId)))?.row;
    const since = row?.updated_at ? new Date(row.updated_at) : wf.startTime;
    if (now - since.getTime() < olderThan) continue;
    found.push({
      payment_id: wf.paymentId,
      account_id: row?.account_id ?? wf.accountId ?? null,
      environment: wf.environment ?? null,
      amount: row ? Number(row.amount) : null,
      currency: row?.currency ?? null,
      status: row?.status ?? null,
      updated_at: iso(row?.updated_at),
      workflow_started_at: iso(wf.startTime),
      age_seconds: Math.round((now - since.getTime()) / 1000),
      provider_config_id: wf.providerConfigId ?? null,
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

/**
 * Payments flagged `needs_attention` (docs/operators.md#needs-attention), from Postgres alone: their
 * workflows have ended, so there is nothing to ask Temporal. Both environments, longest-flagged first.
 */
async function paymentsAttention(ctx: Ctx, args: Args): Promise<number> {
  if (args.positionals.length) throw usage('payments:attention takes no positional arguments');
  const limit = parseLimit(option(args, 'limit'), 100);
  const account = option(args, 'account');
  if (account !== undefined && !/^acct_[0-9A-Za-z]+$/.test(account)) throw usage(`--account takes an account id (acct_…), got "${account}"`);
  const found = [];
  for (const env of ENVIRONMENTS) {
    for (const row of await needingAttention(ctx.db(), env, { accountId: account }, limit)) {
      found.push({
        payment_id: row.id, account_id: row.account_id, environment: env, amount: Number(row.amount), currency: row.currency,
        status: row.status, reason: row.needs_attention_reason, since: iso(row.needs_attention_at), last_error: row.last_error ?? null,
        workflow_id: paymentWorkflowLink(ctx.config, row.id).workflow_id, temporal_ui_url: paymentWorkflowLink(ctx.config, row.id).ui_url,
      });
    }
  }
  found.sort((a, b) => String(a.since).localeCompare(String(b.since)));
  const shown = found.slice(0, limit);
  print(ctx, shown, () => {
    if (!shown.length) return 'No payment needs attention.';
    return [
      table(['PAYMENT', 'ACCOUNT', 'ENV', 'AMOUNT', 'DB STATUS', 'REASON', 'SINCE'], shown.map((p) => [
        p.payment_id, p.account_id, p.environment, money(p.amount, p.currency), p.status, p.reason, p.since,
      ])),
      '',
      `${shown.length} payment${shown.length === 1 ? '' : 's'} need${shown.length === 1 ? 's' : ''} attention: the status is what the database holds; check it against the processor. Next: npm run ops -- payments:show <id>`,
    ].join('\n');
  });
  return EXIT.ok;
}

/** The payment's workflow as Temporal describes it, with its live `state` (or why either is missing). */
async function workflowOf(ctx: Ctx, id: string) {
  const link = paymentWorkflowLink(ctx.config, id);
  const workflow: {
    workflow_id: string; temporal_ui_url: string; status?: string; started_at?: string | null; closed_at?: string | null;
    state?: PaymentState; state_error?: string; error?: string;
  } = { workflow_id: link.workflow_id, temporal_ui_url: link.ui_url };
  try {
    const client = await ctx.temporal();
    const description = await describePayment(client, id);
    workflow.status = description.status.name;
    workflow.started_at = iso(description.startTime);
    workflow.closed_at = iso(description.closeTime);
    try {
      workflow.state = await withTimeout(paymentState(client, id), 5000, 'the state query');
    } catch (err) {
      workflow.state_error = (err as Error).message;
    }
  } catch (err) {
    workflow.error = isNotFound(err) ? 'workflow not found' : (err as Error).message;
  }
  return workflow;
}

async function paymentsShow(ctx: Ctx, args: Args): Promise<number> {
  const id = onePositional(args, 'payment id');
  const { env, row } = await findPaymentOrFail(ctx, id);
  const charges = await chargesOfPayments(ctx.db(), env, [id]);
  const plan = await latestRoutingPlanOf(ctx.db(), env, id);
  const workflow = await workflowOf(ctx, id);
  const summary = {
    payment: {
      id: row.id, account_id: row.account_id, environment: env, status: row.status, amount: Number(row.amount), currency: row.currency,
      auto_capture: row.auto_capture, last_error: row.last_error ?? null, cancellation_reason: row.cancellation_reason ?? null,
      needs_attention: row.needs_attention_at != null, needs_attention_reason: row.needs_attention_reason ?? null,
      created_at: iso(row.created_at), updated_at: iso(row.updated_at),
    },
    charges: charges.map((c) => ({
      id: c.id, attempt_no: c.attempt_no, status: c.status, payment_provider_config_id: c.payment_provider_config_id,
      provider_config_name: c.payment_provider_config_snapshot?.name ?? null, decline_code: c.decline_code ?? null,
      duration_ms: c.performance?.duration ?? null, provider_reference: c.provider_reference ?? null, created_at: iso(c.created_at),
    })),
    routing_plan: plan ? { id: plan.id, current_index: plan.current_index, candidates: plan.candidates } : null,
    workflow,
  };
  print(ctx, summary, () => {
    const state = workflow.state;
    const current = state?.currentIndex !== undefined ? state.candidates[state.currentIndex] : undefined;
    return [
      `Payment ${row.id}`,
      kv([
        ['status', row.status], ['amount', money(row.amount, row.currency)], ['account', `${row.account_id} (${env})`],
        ['created', iso(row.created_at)], ['updated', `${iso(row.updated_at)} (${age(Date.now() - new Date(row.updated_at).getTime())} ago)`],
        ['last error', row.last_error ? JSON.stringify(row.last_error) : null],
        ['needs attention', row.needs_attention_at ? `since ${iso(row.needs_attention_at)} (${row.needs_attention_reason})` : null],
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
        ['id', workflow.workflow_id], ['status', workflow.status ?? workflow.error], ['ui', workflow.temporal_ui_url],
        ...(state ? [
          ['state', state.status], ['reconciling', state.reconciling ? 'yes: an unknown provider outcome is being reconciled' : 'no'],
          ['candidate', current && state.currentIndex !== undefined ? `${state.currentIndex + 1}/${state.candidates.length} ${current.providerConfigId}` : null],
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
  const reason = option(args, 'reason') ?? 'requested_by_customer';
  const { row } = await findPaymentOrFail(ctx, id);
  let result;
  try {
    // Sealed as the API seals a cancel: the worker moves no money on an unsealed command.
    const seal = new Vault(ctx.config.vaultKeys).seal(PAYMENT_SEAL_PURPOSE, paymentCommand({ kind: 'cancel', paymentId: id, reason }));
    const input = { reason, seal, context: { actor: { type: 'system' as const, id: `ops:${operator()}` } } };
    result = await cancelPayment(await ctx.temporal(), id, input, async () => row.status);
  } catch (err) {
    if (err instanceof PaymentWorkflowClosedError) throw failure(`Cannot cancel ${id}: its workflow has finished (the payment is ${row.status}).`);
    if (err instanceof ApiError && err.reason === 'invalid_state') throw failure(`Cannot cancel ${id}: ${err.message}`);
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
  'payments:attention': paymentsAttention,
  'payments:show': paymentsShow,
  'payments:cancel': paymentsCancel,
};
