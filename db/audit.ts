import { createHash } from 'node:crypto';
import stableStringify from 'fast-json-stable-stringify';
import type { Knex } from 'knex';
import { newId } from '../lib/ids';
import { coreTable } from './environments';
import { accountListPage, type KeysetPage, type ListStart } from './page';

/**
 * The audit trail's store: `core.audit_events` (migration 016), one hash chain per account. Rows are only
 * ever appended (a trigger refuses anything else); `verifyAuditChains` recomputes every chain.
 */

export interface AuditEventRow {
  id: string;
  account_id: string | null;
  actor_type: string;
  actor_id: string;
  api_key_id: string | null;
  user_id: string | null;
  ip: string | null;
  user_agent: string | null;
  request_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string | null;
  changes: Record<string, unknown>;
  created_at: Date;
  seq: number;
  prev_hash: string | null;
  hash: string;
}

/** What the caller says about one change; the store adds its id, time and place in the chain. */
export type AuditRecord = Omit<AuditEventRow, 'id' | 'created_at' | 'seq' | 'prev_hash' | 'hash'>;

const auditEvents = (db: Knex) => db<AuditEventRow>(coreTable('audit_events'));

/** The chained fields of a row, in a stable text: what its hash covers besides the previous hash. */
function canonicalContent(row: Omit<AuditEventRow, 'hash'>): string {
  return stableStringify({
    id: row.id, account_id: row.account_id, actor_type: row.actor_type, actor_id: row.actor_id,
    api_key_id: row.api_key_id, user_id: row.user_id, ip: row.ip, user_agent: row.user_agent,
    request_id: row.request_id, action: row.action, resource_type: row.resource_type,
    resource_id: row.resource_id, changes: row.changes, created_at: new Date(row.created_at).toISOString(),
    seq: Number(row.seq), prev_hash: row.prev_hash,
  });
}

/** SHA-256 over the previous row's hash and this row's canonical content, hex. */
export function auditHash(row: Omit<AuditEventRow, 'hash'>): string {
  return createHash('sha256').update(`${row.prev_hash ?? ''}\n${canonicalContent(row)}`).digest('hex');
}

/**
 * Appends one row to its account's chain. Appends to one chain are serialized by a transaction-scoped
 * advisory lock, so the previous row read is still the last when this one goes in.
 */
export async function appendAuditEvent(db: Knex, record: AuditRecord): Promise<AuditEventRow> {
  return db.transaction(async (trx) => {
    await trx.raw(`select pg_advisory_xact_lock(hashtextextended('audit_events:' || ?, 0))`, [record.account_id ?? '']);
    const last = await chainOf(trx, record.account_id).orderBy('seq', 'desc').first('seq', 'hash');
    const unhashed = {
      ...record,
      id: newId('aud'),
      created_at: new Date(),
      seq: last ? Number(last.seq) + 1 : 1,
      prev_hash: last?.hash ?? null,
    };
    const row = { ...unhashed, hash: auditHash(unhashed) };
    await auditEvents(trx).insert({ ...row, changes: JSON.stringify(row.changes) as unknown as Record<string, unknown> });
    return row;
  });
}

/** One account's chain (the platform's when `accountId` is null). */
function chainOf(db: Knex, accountId: string | null) {
  return accountId === null ? auditEvents(db).whereNull('account_id') : auditEvents(db).where({ account_id: accountId });
}

export interface AuditFilter {
  action?: string;
  resourceType?: string;
  resourceId?: string;
  actorId?: string;
  /** Created at or after (inclusive). */
  from?: Date;
  /** Created before (exclusive). */
  to?: Date;
}

/** Where a listing starts: after or before one of the account's rows (by id), or at a page number. */

/**
 * An account's audit events, newest first, one keyset page of them (db/page.ts). Undefined when the cursor
 * is not one of the account's rows, so another account's row is never a place in this list.
 */
export async function listAuditEvents(
  db: Knex, accountId: string, filter: AuditFilter, start: ListStart, limit: number,
): Promise<KeysetPage<AuditEventRow> | undefined> {
  const base = () => {
    const q = auditEvents(db).where({ account_id: accountId });
    if (filter.action) void q.where({ action: filter.action });
    if (filter.resourceType) void q.where({ resource_type: filter.resourceType });
    if (filter.resourceId) void q.where({ resource_id: filter.resourceId });
    if (filter.actorId) void q.where({ actor_id: filter.actorId });
    if (filter.from) void q.where('created_at', '>=', filter.from);
    if (filter.to) void q.where('created_at', '<', filter.to);
    return q;
  };
  return accountListPage(db, () => auditEvents(db), accountId, base, start, limit);
}

/** One chain as verified: how many rows it has, its head, and its first broken row if any. */
export interface ChainReport {
  accountId: string | null;
  rows: number;
  head: { seq: number; hash: string } | null;
  broken: { id: string; seq: number; problem: string } | null;
}

const VERIFY_BATCH = 1000;

/** Walks every chain (or one account's) in order and reports each, with the first row that breaks it. */
export async function verifyAuditChains(db: Knex, accountId?: string | null): Promise<ChainReport[]> {
  const chains = accountId !== undefined
    ? [{ account_id: accountId }]
    : await auditEvents(db).distinct('account_id').orderBy('account_id') as { account_id: string | null }[];
  const reports: ChainReport[] = [];
  for (const { account_id } of chains) reports.push(await verifyChain(db, account_id));
  return reports;
}

async function verifyChain(db: Knex, accountId: string | null): Promise<ChainReport> {
  const report: ChainReport = { accountId, rows: 0, head: null, broken: null };
  let previous: { seq: number; hash: string } | null = null;
  for (;;) {
    const batch: AuditEventRow[] = await chainOf(db, accountId).where('seq', '>', previous?.seq ?? 0).orderBy('seq').limit(VERIFY_BATCH);
    for (const row of batch) {
      report.rows++;
      const problem = rowProblem(row, previous);
      if (problem) {
        report.broken = { id: row.id, seq: Number(row.seq), problem };
        return report;
      }
      previous = { seq: Number(row.seq), hash: row.hash };
      report.head = previous;
    }
    if (batch.length < VERIFY_BATCH) return report;
  }
}

/** Why a row does not follow `previous` in its chain, or null when it does. */
function rowProblem(row: AuditEventRow, previous: { seq: number; hash: string } | null): string | null {
  const expectedSeq = (previous?.seq ?? 0) + 1;
  if (Number(row.seq) !== expectedSeq) return `seq ${row.seq} where ${expectedSeq} was expected (a row is missing)`;
  if ((row.prev_hash ?? null) !== (previous?.hash ?? null)) return 'prev_hash is not the previous row\'s hash';
  if (auditHash(row) !== row.hash) return 'hash does not match the row\'s content (the row was changed)';
  return null;
}
