import { Static, Type } from '@sinclair/typebox';
import type { ApiKeyRow } from '../db/api-keys';
import { iso } from '../lib/timestamps';
import { Obj, Resource } from './schemas';

const S = Type.String();
const NS = Type.Union([S, Type.Null()]);
const TS = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

/** Who made the key: never a secret, only the kind of credential and its id. */
const CreatedBy = Type.Union([
  Obj({ type: Type.Union([Type.Literal('user'), Type.Literal('system'), Type.Literal('api_key')]), id: S }),
  Type.Null(),
], { description: 'The credential that created the key: a user\'s or the system actor\'s subject, or a key id; null for managed keys' });

/** An API key: its value (`key`) only at creation and regeneration, never again; otherwise redacted. */
export const ApiKeySchema = Resource('api_key', {
  id: S, account_id: S, name: S, type: Type.Union([Type.Literal('SECRET'), Type.Literal('PUBLISHABLE')]),
  environment: S, key: NS, redacted_key: S, status: S, permissions: Type.Record(S, Type.Array(S)),
  metadata: Type.Record(S, Type.Unknown()), managed: Type.Boolean(), deleted: Type.Boolean(),
  last_used_ip: NS, last_used_at: TS, expires_at: TS, created_by: CreatedBy, created_at: TS, updated_at: TS,
});

export type ApiKey = Static<typeof ApiKeySchema>;

/** `plaintext` is given only at creation and regeneration. */
export function serializeApiKey(row: ApiKeyRow, plaintext?: string): ApiKey {
  return {
    object: 'api_key',
    id: row.id,
    account_id: row.account_id,
    name: row.name,
    type: row.type,
    environment: row.environment,
    key: plaintext ?? null,
    redacted_key: `${row.key_prefix}…${row.key_last4}`,
    status: row.status,
    permissions: row.permissions ?? {},
    metadata: row.metadata ?? {},
    managed: row.managed,
    deleted: row.deleted,
    last_used_ip: row.last_used_ip ?? null,
    last_used_at: iso(row.last_used_at),
    expires_at: iso(row.expires_at),
    created_by: row.created_by_type && row.created_by_id ? { type: row.created_by_type, id: row.created_by_id } : null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
