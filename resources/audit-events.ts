import { Static, Type } from '@sinclair/typebox';
import type { AuditEventRow } from '../db/audit';
import { iso } from '../lib/timestamps';
import { Resource, Timestamp } from './schemas';

const S = Type.String();
const NS = Type.Union([S, Type.Null()]);

/**
 * One entry of the audit trail (docs/security.md §19): who changed what, from where, and the place of the
 * entry in its account's hash chain (`seq`, `prev_hash`, `hash`), so a client can check the chain itself.
 */
export const AuditEventSchema = Resource('audit_event', {
  id: S,
  account_id: NS,
  actor_type: Type.String({ description: 'user, system or api_key' }),
  actor_id: S,
  api_key_id: NS,
  user_id: NS,
  ip: NS,
  user_agent: NS,
  request_id: NS,
  action: Type.String({ description: 'e.g. api_key.created, provider_config.updated, refund.created' }),
  resource_type: S,
  resource_id: NS,
  changes: Type.Record(S, Type.Unknown(), { description: 'the fields the request set; a secret is only ever "[changed]"' }),
  seq: Type.Integer({ description: 'the entry\'s place in its account\'s chain, from 1' }),
  prev_hash: NS,
  hash: Type.String({ description: 'SHA-256 (hex) over prev_hash and the entry\'s content' }),
  created_at: Timestamp,
});

export type AuditEvent = Static<typeof AuditEventSchema>;

export function serializeAuditEvent(row: AuditEventRow): AuditEvent {
  return {
    object: 'audit_event',
    id: row.id,
    account_id: row.account_id,
    actor_type: row.actor_type,
    actor_id: row.actor_id,
    api_key_id: row.api_key_id,
    user_id: row.user_id,
    ip: row.ip,
    user_agent: row.user_agent,
    request_id: row.request_id,
    action: row.action,
    resource_type: row.resource_type,
    resource_id: row.resource_id,
    changes: row.changes ?? {},
    seq: Number(row.seq),
    prev_hash: row.prev_hash,
    hash: row.hash,
    created_at: iso(row.created_at),
  };
}
