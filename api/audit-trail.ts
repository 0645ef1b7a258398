import type Koa from 'koa';
import { appendAuditEvent, type AuditRecord } from '../db/audit';
import type { Db } from '../db/knex';
import { logger } from '../lib/logger';
import { auditAppendFailures } from './middleware/metrics';
import type { AuditAction } from './audit-actions';
import { Access, type AccountScope } from './auth/access';
import type { Principal } from './auth/authenticate';

/**
 * How the route layer writes one audit event (docs/security.md §19) for a route of api/audit-actions.ts:
 * who (the principal), from where (IP, user agent, request id), on which account, what changed — never
 * a secret's value.
 */

/** Access that remembers the account the handler acted on: the chain its audit event joins. */
export class AuditedAccess extends Access {
  actedOn?: string;

  override async forAccount(): Promise<AccountScope> {
    return this.remember(await super.forAccount());
  }

  override async forResource(accountId: string, what?: string): Promise<AccountScope> {
    return this.remember(await super.forResource(accountId, what));
  }

  private remember(scope: AccountScope): AccountScope {
    this.actedOn = scope.account.id;
    return scope;
  }
}

/** What a secret is recorded as: that it changed, never what it is or was. */
export const CHANGED = '[changed]';

/** Field names that hold secrets wherever they appear, whatever the route declares. */
const SECRET_NAME = /secret|password|passphrase|credential|token|private|api_?key|^key$|signature|^pan$|cvc|card_number/i;

/** A request's values with every secret replaced by CHANGED, at any depth. */
export function redact(value: unknown, secretFields: readonly string[] = []): unknown {
  if (Array.isArray(value)) return value.map((v) => redact(v));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) =>
    [k, secretFields.includes(k) || SECRET_NAME.test(k) ? CHANGED : redact(v)]));
}

export interface AuditedRequest {
  ctx: Koa.Context;
  principal: Principal;
  access: AuditedAccess;
  params: Record<string, unknown>;
  query: Record<string, unknown>;
  body: Record<string, unknown>;
  data: unknown;
}

const MAX_USER_AGENT = 512;

const APPEND_TRIES = 3;

/**
 * Appends the audit event of one successful change, trying three times. The change has already taken
 * effect, so a failure here never turns it into an error: a 5xx would invite a retry that makes the
 * change again (a second key). It is logged and counted (`audit_append_failures_total`) instead.
 */
export async function recordAudit(db: Db, entry: AuditAction, request: AuditedRequest): Promise<void> {
  let record: AuditRecord | undefined;
  for (let tries = 1; ; tries += 1) {
    try {
      record ??= auditRecord(entry, request);
      await appendAuditEvent(db, record);
      return;
    } catch (err) {
      if (tries < APPEND_TRIES) continue;
      auditAppendFailures.inc();
      logger.error({ action: entry.action, resource_type: entry.resource, resource_id: record?.resource_id,
        request_id: request.ctx.state.requestId, err: String(err) }, 'audit event not written');
      return;
    }
  }
}

function auditRecord(entry: AuditAction, { ctx, principal, access, params, query, body, data }: AuditedRequest): AuditRecord {
  const answer = (data ?? {}) as Record<string, unknown>;
  const resourceId = entry.id.startsWith('data.') ? answer[entry.id.slice(5)] : params[entry.id.slice(7)];
  const userAgent = ctx.get('User-Agent');
  return {
    account_id: entry.platform ? null : accountOf(entry, access, principal, answer),
    ...actorOf(principal),
    ip: ctx.ip || null,
    user_agent: userAgent ? userAgent.slice(0, MAX_USER_AGENT) : null,
    request_id: ctx.state.requestId ?? null,
    action: entry.action,
    resource_type: entry.resource,
    resource_id: typeof resourceId === 'string' ? resourceId : null,
    changes: changesOf(entry, query, body),
  };
}

/** The account whose chain the event joins: the one the handler acted on, or the account just made. */
function accountOf(entry: AuditAction, access: AuditedAccess, principal: Principal, answer: Record<string, unknown>): string {
  const made = entry.resource === 'account' ? answer.id : answer.account_id;
  const id = access.actedOn ?? (typeof made === 'string' ? made : undefined) ?? (principal.kind === 'api_key' ? principal.accountId : undefined);
  if (!id) throw new Error(`audit: ${entry.action} acted on no account`);
  return id;
}

function actorOf(principal: Principal): Pick<AuditRecord, 'actor_type' | 'actor_id' | 'api_key_id' | 'user_id'> {
  if (principal.kind === 'api_key') {
    return { actor_type: 'api_key', actor_id: principal.keyId, api_key_id: principal.keyId, user_id: null };
  }
  return {
    actor_type: principal.actorType,
    actor_id: principal.userId,
    api_key_id: null,
    user_id: principal.actorType === 'user' ? principal.userId : null,
  };
}

/** The fields the request changed, secrets redacted, plus the secrets the route renewed itself. */
function changesOf(entry: AuditAction, query: Record<string, unknown>, body: Record<string, unknown>): Record<string, unknown> {
  const changes = redact(body, entry.secret) as Record<string, unknown>;
  for (const name of entry.query ?? []) if (query[name] !== undefined) changes[name] = redact(query[name]);
  for (const name of entry.renews ?? []) changes[name] = CHANGED;
  return changes;
}
