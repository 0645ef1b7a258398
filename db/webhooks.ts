import type { Knex } from 'knex';
import { newId } from '../lib/ids';
import type { DisabledReason, EndpointStatus, WebhookVerificationResult } from '../contracts/webhooks';
import { envTable, type Environment } from './environments';
import { paged, type Page } from './page';
import { PREPARED } from './knex';

/**
 * The webhook endpoints store (docs/webhooks.md): each environment's `webhook_endpoints`, with their
 * encrypted secrets. The only module that queries that table; deliveries and their attempts are
 * db/webhook-deliveries.ts's.
 */

/** The last handshake, as recorded on the endpoint. */
export interface VerificationSummary extends WebhookVerificationResult {
  duration_ms: number;
  url: string;
  at: string;
}

export interface WebhookEndpointRow {
  id: string;
  account_id: string;
  url: string;
  description: string | null;
  events: string[];
  metadata: Record<string, unknown>;
  status: EndpointStatus;
  disabled_reason: DisabledReason | null;
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  previous_secret_expires_at: Date | null;
  secret_rotation: number;
  verification_count: number;
  verification: VerificationSummary | null;
  verified_url: string | null;
  verified_at: Date | null;
  failing_since: Date | null;
  deleted: boolean;
  created_at: Date;
  updated_at: Date;
}

const endpoints = (db: Knex, env: Environment) => db<WebhookEndpointRow>(envTable(env, 'webhook_endpoints'));

/** Every column of an endpoint's row, in the table's order: what the fan-out's prepared read names. */
export const ENDPOINT_COLUMNS = [
  'id', 'account_id', 'url', 'description', 'events', 'metadata', 'status', 'disabled_reason', 'secret_encrypted',
  'previous_secret_encrypted', 'previous_secret_expires_at', 'secret_rotation', 'verification_count', 'verification', 'verified_url',
  'verified_at', 'failing_since', 'deleted', 'created_at', 'updated_at',
] as const satisfies readonly (keyof WebhookEndpointRow)[];
/** Writes that carry jsonb text or SQL expressions, which the typed builders would refuse. */
const raw = (db: Knex, env: Environment) => db(envTable(env, 'webhook_endpoints'));


// ---------------------------------------------------------------------------------------------------
// Endpoints

/** An endpoint by id, deleted ones included (callers decide what a deleted one means to them). */
export async function findEndpoint(db: Knex, env: Environment, id: string): Promise<WebhookEndpointRow | undefined> {
  return endpoints(db, env).where({ id }).first();
}

export interface NewEndpoint {
  accountId: string;
  url: string;
  description: string | null;
  events: string[];
  metadata: Record<string, unknown>;
  secretEncrypted: string;
}

/**
 * A new endpoint, waiting for its first handshake (verification number 1); undefined when the account
 * already has `limit` endpoints that are not deleted. An account's creates take turns (a transaction-level
 * advisory lock on its endpoints), so concurrent ones cannot pass the limit together.
 */
export async function insertEndpoint(db: Knex, env: Environment, e: NewEndpoint, limit: number): Promise<WebhookEndpointRow | undefined> {
  return db.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`${envTable(env, 'webhook_endpoints')}/${e.accountId}`]);
    const [{ count }] = await endpoints(trx, env).where({ account_id: e.accountId, deleted: false }).count({ count: '*' });
    if (Number(count) >= limit) return undefined;
    const [row] = await raw(trx, env).insert({
      id: newId('we'), account_id: e.accountId, url: e.url, description: e.description, events: JSON.stringify(e.events),
      metadata: JSON.stringify(e.metadata), status: 'pending_verification', secret_encrypted: e.secretEncrypted, verification_count: 1,
    }).returning('*');
    return row as WebhookEndpointRow;
  });
}

/** An account's endpoints that are not deleted, newest first. */
export async function listEndpoints(db: Knex, env: Environment, accountId: string, filter: { status?: EndpointStatus }, page: Page) {
  return paged(() => endpoints(db, env).where({ account_id: accountId, deleted: false, ...(filter.status ? { status: filter.status } : {}) }), page);
}

export interface EndpointPatch {
  url: string;
  events?: string[];
  description?: string | null;
  metadata?: Record<string, unknown>;
  status?: EndpointStatus;
  disabled_reason?: DisabledReason | null;
  failing_since?: null;
  /** Counts a new handshake: verification_count + 1 (read it back from the returned row). */
  nextVerification?: boolean;
}

/** Changes an endpoint that is not deleted; undefined when it is (or is gone). */
export async function updateEndpoint(db: Knex, env: Environment, id: string, patch: EndpointPatch): Promise<WebhookEndpointRow | undefined> {
  const { nextVerification, events, metadata, ...columns } = patch;
  // Only what the patch names changes: a field left undefined keeps its value.
  const set = Object.fromEntries(Object.entries(columns).filter(([, v]) => v !== undefined));
  const [row] = await raw(db, env).where({ id, deleted: false }).update({
    ...set,
    ...(events ? { events: JSON.stringify(events) } : {}),
    ...(metadata !== undefined ? { metadata: JSON.stringify(metadata) } : {}),
    ...(nextVerification ? { verification_count: db.raw('verification_count + 1') } : {}),
    updated_at: db.fn.now(),
  }).returning('*');
  return row as WebhookEndpointRow | undefined;
}

/** Soft delete: no further deliveries, history kept. Undefined when it was already deleted. */
export async function deleteEndpoint(db: Knex, env: Environment, id: string): Promise<WebhookEndpointRow | undefined> {
  const [row] = await endpoints(db, env).where({ id, deleted: false }).update({ deleted: true, updated_at: db.fn.now() }).returning('*');
  return row;
}

/** Takes the next handshake number of an endpoint. */
export async function nextVerificationNumber(db: Knex, env: Environment, id: string): Promise<number> {
  const [{ verification_count: n }] = await raw(db, env).where({ id })
    .update({ verification_count: db.raw('verification_count + 1') }).returning('verification_count');
  return n as number;
}

/**
 * Records a handshake's answer, only if the endpoint still has the URL and handshake number it ran
 * for: a slow handshake never enables a URL changed meanwhile. A pending endpoint that passed is enabled.
 */
export async function recordVerification(db: Knex, env: Environment, run: { endpointId: string; url: string; verification: number },
  summary: VerificationSummary, verifiedAt: Date): Promise<void> {
  const current = { id: run.endpointId, url: run.url, verification_count: run.verification, deleted: false };
  await raw(db, env).where(current).update({
    verification: JSON.stringify(summary),
    ...(summary.ok ? {
      verified_url: run.url, verified_at: verifiedAt,
      status: db.raw(`case when status = 'pending_verification' then 'enabled' else status end`),
    } : {}),
    updated_at: db.fn.now(),
  });
}

/** The enabled endpoints of an account, whole: the fan-out's targets, which its first attempts sign and send with. */
export async function enabledEndpointsOf(db: Knex, env: Environment, accountId: string): Promise<WebhookEndpointRow[]> {
  return endpoints(db, env).where({ account_id: accountId, status: 'enabled', deleted: false }).select(...ENDPOINT_COLUMNS).options(PREPARED);
}

/**
 * Whether an enabled endpoint of the event's account listens to its type: lib/webhook-events.ts's
 * filterMatches, in SQL, so that an event nobody listens to is never due for a fan-out. `accountId` and
 * `eventType` name columns of the statement this runs in. The fan-out still matches each endpoint with
 * filterMatches.
 */
export function listeningEndpointQuery(db: Knex, env: Environment, accountId: string, eventType: string): Knex.QueryBuilder {
  return db({ w: envTable(env, 'webhook_endpoints') }).where({ 'w.status': 'enabled', 'w.deleted': false })
    .whereRaw('w.account_id = ??', [accountId])
    .whereRaw(
      `exists (select 1 from jsonb_array_elements_text(w.events) as f(entry)
        where entry = '*' or entry = ?? or (right(entry, 2) = '.*' and starts_with(??, left(entry, -1))))`,
      [eventType, eventType],
    )
    .select(db.raw('1'))
    .limit(1);
}

// Endpoint health, written with each attempt (in its transaction).

/** After a success: the endpoint is no longer failing. */
export async function markEndpointHealthy(db: Knex, env: Environment, id: string): Promise<void> {
  await endpoints(db, env).where({ id }).whereNotNull('failing_since').update({ failing_since: null });
}

/** After a failure: when the current run of failures began (now, if this is its first). */
export async function markEndpointFailing(db: Knex, env: Environment, id: string, now: Date): Promise<Date> {
  const [{ failing_since: since }] = await raw(db, env).where({ id })
    .update({ failing_since: db.raw('coalesce(failing_since, ?)', [now]) }).returning('failing_since');
  return new Date(since as Date | string);
}

/** Disables an enabled endpoint; false when it was not enabled (someone else got there first). */
export async function disableEndpoint(db: Knex, env: Environment, id: string, reason: DisabledReason): Promise<boolean> {
  const changed = await endpoints(db, env).where({ id, status: 'enabled' }).update({ status: 'disabled', disabled_reason: reason, updated_at: db.fn.now() });
  return changed > 0;
}

// ---------------------------------------------------------------------------------------------------
// Secrets

export interface SecretSwap {
  secretEncrypted: string;
  /** The outgoing secret while it keeps signing, else null (dropped at once). */
  previousSecretEncrypted: string | null;
  previousExpiresAt: Date | null;
  rotation: number;
}

/** Swaps an endpoint's secrets, if no other rotation came first (its secret_rotation is still `fromRotation`). */
export async function swapSecrets(db: Knex, env: Environment, id: string, fromRotation: number, swap: SecretSwap): Promise<WebhookEndpointRow | undefined> {
  const [row] = await endpoints(db, env).where({ id, secret_rotation: fromRotation, deleted: false }).update({
    secret_encrypted: swap.secretEncrypted,
    previous_secret_encrypted: swap.previousSecretEncrypted,
    previous_secret_expires_at: swap.previousExpiresAt,
    secret_rotation: swap.rotation,
    updated_at: db.fn.now(),
  }).returning('*');
  return row;
}

/** The end of a rotation's grace period: drops the previous secret, unless a newer rotation replaced it. */
export async function dropPreviousSecret(db: Knex, env: Environment, id: string, rotation: number): Promise<boolean> {
  const changed = await endpoints(db, env).where({ id, secret_rotation: rotation }).whereNotNull('previous_secret_encrypted')
    .update({ previous_secret_encrypted: null, previous_secret_expires_at: null, updated_at: db.fn.now() });
  return changed > 0;
}
