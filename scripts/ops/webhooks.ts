/** `npm run ops -- webhooks:…`: dead-lettered deliveries, replay one, recover an endpoint's window. */
import type { Environment } from '../../db/environments';
import { findDelivery, listDeadLettered, replayStore, type WebhookDeliveryRow } from '../../db/webhook-deliveries';
import { findEndpoint as findEndpointRow, type WebhookEndpointRow } from '../../db/webhooks';
import { webhookClient } from '../../workflows/webhooks/client';
import {
  type Args, type Command, type Ctx, ENVIRONMENTS, EXIT, failure, inEnvironments, iso, notFound, onePositional, parseLimit, parseTime, print, table, usage,
} from './shared';

export const WEBHOOKS_USAGE = `Webhooks
  webhooks:dead [--endpoint we_…] [--limit 50]
                                  dead-lettered deliveries, newest first
  webhooks:replay <whd_id>        send a delivery again now (same webhook-id)
  webhooks:recover <we_id> --since <iso> [--until <iso>]
                                  re-send every failed or dead-lettered delivery created in the window
`;

async function findEndpoint(ctx: Ctx, id: string) {
  if (!/^we_[0-9A-Za-z]+$/.test(id)) throw usage(`"${id}" is not a webhook endpoint id (we_…)`);
  const found = await inEnvironments((env) => findEndpointRow(ctx.db(), env, id));
  if (!found || found.row.deleted) throw notFound(`No webhook endpoint ${id}.`);
  return found;
}

function requireEnabled(endpoint: WebhookEndpointRow): void {
  if (endpoint.status !== 'enabled') {
    throw failure(`Webhook endpoint ${endpoint.id} is ${endpoint.status}${endpoint.disabled_reason ? ` (${endpoint.disabled_reason})` : ''}: only enabled endpoints receive deliveries. Re-enable it first (PATCH /v1/webhook-endpoints/${endpoint.id} {"disabled": false}).`);
  }
}

async function webhooksDead(ctx: Ctx, args: Args): Promise<number> {
  if (args.positionals.length) throw usage('webhooks:dead takes no positional arguments (use --endpoint we_…)');
  const limit = parseLimit(args.values.limit as string | undefined, 50);
  const endpointId = args.values.endpoint as string | undefined;
  const envs = endpointId ? [(await findEndpoint(ctx, endpointId)).env] : ENVIRONMENTS;
  const rows: (WebhookDeliveryRow & { environment: Environment })[] = [];
  for (const env of envs) {
    const found = await listDeadLettered(ctx.db(), env, { endpointId, limit });
    rows.push(...found.map((r) => ({ ...r, environment: env })));
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


async function webhooksReplay(ctx: Ctx, args: Args): Promise<number> {
  const id = onePositional(args, 'webhook delivery id');
  if (!/^whd_[0-9A-Za-z]+$/.test(id)) throw usage(`"${id}" is not a webhook delivery id (whd_…)`);
  const found = await inEnvironments((env) => findDelivery(ctx.db(), env, id));
  if (!found) throw notFound(`No webhook delivery ${id}.`);
  const { env, row } = found;
  const endpoint = await findEndpointRow(ctx.db(), env, row.endpoint_id);
  if (!endpoint || endpoint.deleted) throw failure(`The endpoint of ${id} (${row.endpoint_id}) was deleted.`);
  requireEnabled(endpoint);
  const result = await webhookClient(await ctx.temporal(), ctx.config).resendDelivery(replayStore(ctx.db(), env), row);
  if (result === 'skipped') throw failure(`${id} changed while it was being replayed; try again.`);
  const after = (await findDelivery(ctx.db(), env, id)) ?? row;
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
  const recovered = await webhookClient(await ctx.temporal(), ctx.config).recoverDeliveries(replayStore(ctx.db(), env), id, { since, until });
  print(ctx, { endpoint_id: id, since: since.toISOString(), until: until?.toISOString() ?? null, recovered }, () =>
    `${recovered} failed or dead-lettered deliver${recovered === 1 ? 'y' : 'ies'} of ${id} re-sent (created since ${since.toISOString()}${until ? `, before ${until.toISOString()}` : ''}).`);
  return EXIT.ok;
}

export const webhookCommands: Record<string, Command> = {
  'webhooks:dead': webhooksDead,
  'webhooks:replay': webhooksReplay,
  'webhooks:recover': webhooksRecover,
};
