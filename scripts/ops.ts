import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import ms from 'ms';
import { envTable, type Environment } from '../db/environments';
import { createDb, type Db } from '../db/knex';
import { loadConfig, type Config } from '../lib/config';
import { localStackTargets } from '../lib/local-stack';
import { connectClient } from '../workflows/client';
import { recoverDeliveries, resendDelivery } from '../lib/webhook-replay';
import { paymentQueries, paymentUpdates, paymentWorkflowId, SEARCH_ATTRIBUTES, type PaymentState } from '../workflows/shared';

/**
 * `npm run ops -- <command>`: the operator's tools for stuck payments and failed webhooks. Talks to
 * Postgres and Temporal directly (the same DATABASE_URL / TEMPORAL_ADDRESS as the server; with
 * nothing set, those of a running `npm start`). Exit codes: 0 ok, 1 failure, 2 usage, 3 not found.
 */
export const EXIT = { ok: 0, failure: 1, usage: 2, notFound: 3 } as const;

const USAGE = `Usage: npm run ops -- <command> [options]

Payments
  payments:stuck [--older-than 5m] [--account acct_…] [--limit 100]
                                  payments in PROCESSING (Temporal: PaymentStatus="PROCESSING")
  payments:show <pay_id>          the payment row, its charges and its workflow's live state
  payments:cancel <pay_id> [--reason requested_by_customer]
                                  cancel through the payment workflow (CREATED, FAILED, AUTHORIZED)

Webhooks
  webhooks:dead [--endpoint we_…] [--limit 50]
                                  dead-lettered deliveries, newest first
  webhooks:replay <whd_id>        send a delivery again now (same webhook-id)
  webhooks:recover <we_id> --since <iso> [--until <iso>]
                                  re-send every failed or dead-lettered delivery created in the window

Options: --json (machine-readable output), --help
Exit codes: 0 ok, 1 failure, 2 usage, 3 not found
Environment: DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, … as for the server
             (unset: the embedded Postgres and local Temporal of a running \`npm start\`)
`;

export interface OpsIo { out(text: string): void; err(text: string): void }

class OpsError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}
const usage = (message: string) => new OpsError(EXIT.usage, `${message}\n\n${USAGE}`);
const notFound = (message: string) => new OpsError(EXIT.notFound, message);
const failure = (message: string) => new OpsError(EXIT.failure, message);

const ENVIRONMENTS: Environment[] = ['production', 'sandbox'];

interface Ctx {
  config: Config;
  db(): Db;
  temporal(): Promise<Client>;
  json: boolean;
  io: OpsIo;
}

// ------------------------------------------------------------------------------------------------
// Output

/** A plain text table: header row, then one line per row, columns padded to fit. */
export function table(headers: string[], rows: (string | number | null | undefined)[][]): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined || c === '' ? '-' : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ');
  return [line(headers), ...cells.map(line)].join('\n');
}

function kv(pairs: [string, unknown][]): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(width)}  ${v === null || v === undefined || v === '' ? '-' : String(v)}`).join('\n');
}

const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);
const money = (amount: number | string, currency: string) => `${(Number(amount) / 100).toFixed(2)} ${currency}`;
const age = (msAgo: number) => ms(Math.max(0, Math.round(msAgo / 1000) * 1000));

function print(ctx: Ctx, json: unknown, text: () => string): void {
  ctx.io.out(ctx.json ? JSON.stringify(json, null, 2) : text());
}

// ------------------------------------------------------------------------------------------------
// Lookups

async function findInEnvironments(db: Db, table: string, id: string): Promise<{ env: Environment; row: any } | undefined> {
  for (const env of ENVIRONMENTS) {
    const row = await db(envTable(env, table)).where({ id }).first();
    if (row) return { env, row };
  }
  return undefined;
}

async function findPayment(ctx: Ctx, id: string) {
  if (!/^pay_[0-9A-Za-z]+$/.test(id)) throw usage(`"${id}" is not a payment id (pay_…)`);
  const found = await findInEnvironments(ctx.db(), 'payments', id);
  if (!found) throw notFound(`No payment ${id} (looked in live and sandbox).`);
  return found;
}

async function findEndpoint(ctx: Ctx, id: string) {
  if (!/^we_[0-9A-Za-z]+$/.test(id)) throw usage(`"${id}" is not a webhook endpoint id (we_…)`);
  const found = await findInEnvironments(ctx.db(), 'webhook_endpoints', id);
  if (!found || found.row.deleted) throw notFound(`No webhook endpoint ${id}.`);
  return found;
}

function requireEnabled(endpoint: any): void {
  if (endpoint.status !== 'enabled') {
    throw failure(`Webhook endpoint ${endpoint.id} is ${endpoint.status}${endpoint.disabled_reason ? ` (${endpoint.disabled_reason})` : ''}: only enabled endpoints receive deliveries. Re-enable it first (PATCH /v1/webhook-endpoints/${endpoint.id} {"disabled": false}).`);
  }
}

function temporalUiUrl(config: Config, workflowId: string): string {
  const ns = config.temporal.namespace;
  return `${config.temporal.uiUrl}/namespaces/${encodeURIComponent(ns)}/workflows/${encodeURIComponent(workflowId)}`;
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} did not answer within ${timeoutMs / 1000}s (is a worker running?)`)), timeoutMs); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function parseDuration(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = ms(value as ms.StringValue);
  if (typeof parsed !== 'number' || !Number.isFinite(parsed) || parsed < 0) throw usage(`${flag} takes a duration such as 5m, 90s or 2h (got "${value}")`);
  return parsed;
}

function parseTime(flag: string, value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const date = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(date.getTime())) throw usage(`${flag} takes an ISO-8601 time such as 2026-11-21T10:00:00Z (got "${value}")`);
  return date;
}

function parseLimit(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw usage(`--limit takes an integer from 1 to 1000 (got "${value}")`);
  return n;
}

// ------------------------------------------------------------------------------------------------
// Commands

interface Args { positionals: string[]; values: Record<string, string | boolean | undefined> }

function onePositional(args: Args, what: string): string {
  if (args.positionals.length !== 1) throw usage(`expected exactly one ${what}`);
  return args.positionals[0];
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
      temporal_ui_url: temporalUiUrl(ctx.config, wf.workflowId),
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
  const workflow: Record<string, unknown> = { workflow_id: workflowId, temporal_ui_url: temporalUiUrl(ctx.config, workflowId) };
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

async function webhooksDead(ctx: Ctx, args: Args): Promise<number> {
  if (args.positionals.length) throw usage('webhooks:dead takes no positional arguments (use --endpoint we_…)');
  const limit = parseLimit(args.values.limit as string | undefined, 50);
  const endpointId = args.values.endpoint as string | undefined;
  const envs = endpointId ? [(await findEndpoint(ctx, endpointId)).env] : ENVIRONMENTS;
  const rows: any[] = [];
  for (const env of envs) {
    const found = await ctx.db()(envTable(env, 'webhook_deliveries')).where({ status: 'dead_lettered' })
      .modify((q) => { if (endpointId) void q.where({ endpoint_id: endpointId }); })
      .orderBy('dead_lettered_at', 'desc').orderBy('id', 'desc').limit(limit);
    rows.push(...found.map((r: any) => ({ ...r, environment: env })));
  }
  rows.sort((a, b) => new Date(b.dead_lettered_at ?? b.updated_at).getTime() - new Date(a.dead_lettered_at ?? a.updated_at).getTime());
  const dead = rows.slice(0, limit).map((r) => ({
    id: r.id, account_id: r.account_id, environment: r.environment, endpoint_id: r.endpoint_id, event_id: r.event_id, event_type: r.event_type,
    attempt_count: r.attempt_count, replay_count: r.replay_count, last_status_code: r.last_status_code ?? null, last_error: r.last_error ?? null,
    dead_lettered_at: iso(r.dead_lettered_at), created_at: iso(r.created_at),
  }));
  print(ctx, dead, () => (dead.length
    ? `${table(['DELIVERY', 'ENDPOINT', 'EVENT', 'ATTEMPTS', 'LAST CODE', 'DEAD-LETTERED', 'LAST ERROR'], dead.map((d) => [
      d.id, d.endpoint_id, d.event_type, d.attempt_count, d.last_status_code, d.dead_lettered_at, d.last_error,
    ]))}\n\n${dead.length} dead-lettered. Replay one: npm run ops -- webhooks:replay <whd_id>; all of an endpoint's: webhooks:recover <we_id> --since <iso>`
    : `No dead-lettered deliveries${endpointId ? ` for ${endpointId}` : ''}.`));
  return EXIT.ok;
}

function replayDeps(ctx: Ctx) {
  return { db: ctx.db(), temporal: ctx.temporal, webhookRetrySchedule: ctx.config.webhookRetrySchedule };
}

async function webhooksReplay(ctx: Ctx, args: Args): Promise<number> {
  const id = onePositional(args, 'webhook delivery id');
  if (!/^whd_[0-9A-Za-z]+$/.test(id)) throw usage(`"${id}" is not a webhook delivery id (whd_…)`);
  const found = await findInEnvironments(ctx.db(), 'webhook_deliveries', id);
  if (!found) throw notFound(`No webhook delivery ${id}.`);
  const { env, row } = found;
  const endpoint = await ctx.db()(envTable(env, 'webhook_endpoints')).where({ id: row.endpoint_id }).first();
  if (!endpoint || endpoint.deleted) throw failure(`The endpoint of ${id} (${row.endpoint_id}) was deleted.`);
  requireEnabled(endpoint);
  const result = await resendDelivery(replayDeps(ctx), env, row);
  if (result === 'skipped') throw failure(`${id} changed while it was being replayed; try again.`);
  const after = await ctx.db()(envTable(env, 'webhook_deliveries')).where({ id }).first();
  print(ctx, { delivery_id: id, result, status: after.status, workflow_id: after.workflow_id }, () => (result === 'signalled'
    ? `${id} was still retrying: its workflow was told to try again now.`
    : `Replay of ${id} started (workflow ${after.workflow_id}). Watch it: GET /v1/webhook-deliveries/${id}`));
  return EXIT.ok;
}

async function webhooksRecover(ctx: Ctx, args: Args): Promise<number> {
  const id = onePositional(args, 'webhook endpoint id');
  const since = parseTime('--since', args.values.since as string | undefined);
  if (!since) throw usage('webhooks:recover needs --since <iso>');
  const until = parseTime('--until', args.values.until as string | undefined);
  if (until && until <= since) throw usage('--until must be after --since');
  const { env, row } = await findEndpoint(ctx, id);
  requireEnabled(row);
  const recovered = await recoverDeliveries(replayDeps(ctx), env, id, since, until);
  print(ctx, { endpoint_id: id, since: since.toISOString(), until: until?.toISOString() ?? null, recovered }, () =>
    `${recovered} failed or dead-lettered deliver${recovered === 1 ? 'y' : 'ies'} of ${id} re-sent (created since ${since.toISOString()}${until ? `, before ${until.toISOString()}` : ''}).`);
  return EXIT.ok;
}

const COMMANDS: Record<string, (ctx: Ctx, args: Args) => Promise<number>> = {
  'payments:stuck': paymentsStuck,
  'payments:show': paymentsShow,
  'payments:cancel': paymentsCancel,
  'webhooks:dead': webhooksDead,
  'webhooks:replay': webhooksReplay,
  'webhooks:recover': webhooksRecover,
};

// ------------------------------------------------------------------------------------------------

/** Runs one command; answers the exit code. In-process for tests; `main` below for the shell. */
export async function runOps(argv: string[], opts: { env?: NodeJS.ProcessEnv; io?: OpsIo } = {}): Promise<number> {
  const io = opts.io ?? { out: (t) => process.stdout.write(`${t}\n`), err: (t) => process.stderr.write(`${t}\n`) };
  const env = opts.env ?? process.env;
  let db: Db | undefined;
  let client: Promise<Client> | undefined;
  try {
    let parsed;
    try {
      parsed = parseArgs({
        args: argv,
        allowPositionals: true,
        strict: true,
        options: {
          json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
          'older-than': { type: 'string' }, account: { type: 'string' }, limit: { type: 'string' }, reason: { type: 'string' },
          endpoint: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' },
        },
      });
    } catch (err) {
      throw usage((err as Error).message);
    }
    const [command, ...positionals] = parsed.positionals;
    if (parsed.values.help || command === 'help') {
      io.out(USAGE);
      return EXIT.ok;
    }
    if (!command) throw usage('no command given');
    const run = COMMANDS[command];
    if (!run) throw usage(`unknown command "${command}"`);

    const config = loadConfig(env);
    const targets = localStackTargets({ databaseUrl: config.databaseUrl, temporalAddress: config.temporal.address }, env);
    const ctx: Ctx = {
      config,
      json: parsed.values.json === true,
      io,
      db: () => (db ??= createDb(targets.databaseUrl, { max: 4 })),
      temporal: () => (client ??= connectClient(config, targets.temporalAddress).catch((err) => {
        throw failure(`Temporal at ${targets.temporalAddress} is not reachable (${(err as Error).message}). Set TEMPORAL_ADDRESS, or run npm start.`);
      })),
    };
    return await run(ctx, { positionals, values: parsed.values as Args['values'] });
  } catch (err) {
    if (err instanceof OpsError) {
      io.err(`ops: ${err.message}`);
      return err.code;
    }
    const message = (err as Error)?.message ?? String(err);
    const code = (err as { code?: string })?.code;
    if (code === 'ECONNREFUSED' || code === '28P01' || code === '3D000') {
      io.err(`ops: Postgres is not reachable (${message}). Set DATABASE_URL, or run npm start.`);
    } else {
      io.err(`ops: ${message}`);
    }
    return EXIT.failure;
  } finally {
    await db?.destroy().catch(() => {});
    const connected = await client?.catch(() => undefined);
    await connected?.connection.close().catch(() => {});
  }
}

if (require.main === module) {
  void runOps(process.argv.slice(2)).then((code) => { process.exitCode = code; });
}
