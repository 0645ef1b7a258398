import { Type } from '@sinclair/typebox';
import { deleteApiKey, findApiKey, findLiveApiKey, insertApiKeyWithin, KeyCreator, listLiveApiKeys } from '../../db/api-keys';
import type { Db } from '../../db/knex';
import { looksLikeId } from '../../lib/ids';
import { generateApiKey, hashApiKey } from '../../lib/secrets';
import { rotateApiKey } from '../../workflows/api-keys/client';
import type { ApiKeyRotationInput } from '../../contracts/api-keys';
import type { Access } from '../auth/access';
import type { Principal } from '../auth/authenticate';
import { assertMayGrant, fromPermissionMap, PermissionMap, toPermissionMap, unknownPermissions } from '../auth/permissions';
import { ApiError, FieldError } from '../errors';
import { ApiKeySchema, serializeApiKey } from '../../resources/api-keys';
import { defineRoute } from '../route';
import { Metadata, Obj } from '../../resources/schemas';
import { requestTime } from '../validation';

/** What a publishable key can ever do: read a payment and confirm it. */
const PUBLISHABLE_PERMISSIONS = new Set(['payment:read', 'payment:confirm']);

const KeyParams = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });

/** The credential making the request, as a key records its creator. */
function creatorOf(principal: Principal): KeyCreator {
  return principal.kind === 'api_key' ? { type: 'api_key', id: principal.keyId } : { type: principal.actorType, id: principal.userId };
}

/**
 * The latest a credential issued by this caller may live: a key with an expiry hands on nothing that
 * outlives it. A user's or the system actor's token bounds nothing: its `exp` ends a sign-in session, not
 * the standing its holder acts on (a membership, the platform), and keys exist to outlast sessions.
 */
async function issuerExpiry(db: Db, principal: Principal): Promise<Date | null> {
  if (principal.kind !== 'api_key') return null;
  const caller = await findApiKey(db, principal.keyId);
  // Deleted since its (cached) authentication: it issues nothing.
  if (!caller || caller.deleted) throw new ApiError('invalid_api_key');
  return caller.expires_at ? new Date(caller.expires_at) : null;
}

/** The new key's expiry: the one asked for, in the future and not past the issuer's; else the issuer's. */
function expiryOf(requested: string | undefined, bound: Date | null, fields: FieldError[]): Date | null {
  if (!requested) return bound;
  const expiresAt = requestTime(requested, 'body/expires_at');
  if (expiresAt.getTime() <= Date.now()) fields.push({ path: 'body/expires_at', message: 'must be in the future' });
  else if (bound && expiresAt.getTime() > bound.getTime()) {
    fields.push({ path: 'body/expires_at', message: `must not be later than the expiry of the key creating it (${bound.toISOString()})` });
  }
  return expiresAt;
}

/** A live (not deleted) key by id, visible to the caller with this route's permission; else 404. */
async function locateKey(db: Db, access: Access, id: string) {
  const row = looksLikeId(id, 'key') ? await findLiveApiKey(db, id) : undefined;
  if (!row) throw ApiError.notFound('API key');
  const scope = await access.forResource(row.account_id, 'API key');
  return { row, scope };
}

export const apiKeyRoutes = [
  defineRoute({
    method: 'post',
    path: '/api-keys',
    tag: 'API keys',
    summary: 'Create a custom API key; its value is shown in this response only',
    permission: 'account:api:key:create',
    errors: ['api_key_limit_reached'],
    status: 201,
    message: 'API key created',
    body: Obj({
      name: Type.String({ minLength: 1, maxLength: 200 }),
      type: Type.Optional(Type.Union([Type.Literal('SECRET'), Type.Literal('PUBLISHABLE')], { default: 'SECRET' })),
      permissions: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 100 }), Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 20 }), {
        maxProperties: 50,
        description: 'scope → actions, e.g. { "payment": ["read", "create"] }. Defaults to the creator\'s own permissions.',
      })),
      metadata: Type.Optional(Metadata),
      expires_at: Type.Optional(Type.String({
        format: 'date-time',
        description: 'When created by a key with an expiry: no later than it, and it by default. Otherwise none by default.',
      })),
    }),
    response: ApiKeySchema,
    async handler({ body, principal, access, deps }) {
      const scope = await access.forAccount();
      const type = body.type ?? 'SECRET';
      const fields: FieldError[] = [];

      const unknown = body.permissions ? unknownPermissions(body.permissions) : [];
      for (const p of unknown) fields.push({ path: `body/permissions/${p.slice(0, p.lastIndexOf(':'))}`, message: `${p} is not a known permission` });
      if (!unknown.length && type === 'PUBLISHABLE' && body.permissions) {
        for (const p of fromPermissionMap(body.permissions)) {
          if (!PUBLISHABLE_PERMISSIONS.has(p)) fields.push({ path: `body/permissions/${p.slice(0, p.lastIndexOf(':'))}`, message: `a publishable key cannot hold ${p}` });
        }
      }
      const expiresAt = expiryOf(body.expires_at, await issuerExpiry(deps.db, principal), fields);
      if (fields.length) throw ApiError.validation(fields);

      const defaults = type === 'PUBLISHABLE' ? PUBLISHABLE_PERMISSIONS : scope.permissions;
      const requested = body.permissions ? fromPermissionMap(body.permissions) : new Set(defaults);
      // Publishable keys included: their payment:read/confirm are rights like any other.
      assertMayGrant(scope.permissions, requested, 'A key cannot be given permissions its creator lacks');
      const limit = deps.config.apiKeysPerAccountMax;
      const made = await insertApiKeyWithin(deps.db, deps.config.apiKeyPepper, {
        accountId: scope.account.id,
        environment: scope.environment,
        type,
        name: body.name,
        managed: false,
        permissions: toPermissionMap(requested) as PermissionMap,
        metadata: body.metadata,
        expiresAt,
        createdBy: creatorOf(principal),
      }, limit);
      if (!made) throw new ApiError('api_key_limit_reached', `An account may have at most ${limit} API keys; delete one first.`, { limit });
      return { data: serializeApiKey(made.row, made.plaintext) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/api-keys',
    tag: 'API keys',
    summary: 'List the account\'s keys (values are never shown again, only redacted)',
    permission: 'account:api:key:read',
    message: 'API keys retrieved',
    response: Type.Array(ApiKeySchema),
    async handler({ access, deps }) {
      const scope = await access.forAccount();
      const rows = await listLiveApiKeys(deps.db, scope.account.id);
      return { data: rows.map((r) => serializeApiKey(r)) };
    },
  }),

  defineRoute({
    method: 'delete',
    path: '/api-keys/:id',
    tag: 'API keys',
    summary: 'Delete a key (soft); it stops authenticating at once',
    permission: 'account:api:key:delete',
    envelope: 'void',
    message: 'API key deleted',
    params: KeyParams,
    async handler({ params, access, deps }) {
      await locateKey(deps.db, access, params.id);
      if (!(await deleteApiKey(deps.db, params.id))) throw ApiError.notFound('API key');
      deps.auth.invalidate();
      return {};
    },
  }),

  defineRoute({
    method: 'post',
    path: '/api-keys/:id/regenerate',
    tag: 'API keys',
    summary: 'Rotate a managed key\'s secret; the new value is shown in this response only',
    permission: 'account:api:key:update',
    errors: ['key_not_managed', 'key_outlives_caller', 'conflict', 'temporal_unavailable'],
    message: 'API key regenerated',
    params: KeyParams,
    response: ApiKeySchema,
    async handler({ params, principal, access, deps, ctx }) {
      const { row, scope } = await locateKey(deps.db, access, params.id);
      // Regenerating revokes the key's current value (what deleting a key does) and hands the caller a
      // new value with all the key's permissions (what creating one does): the caller needs both rights.
      assertMayGrant(scope.permissions, ['account:api:key:delete', ...fromPermissionMap(row.permissions as PermissionMap)],
        'Regenerating this key needs permissions the caller lacks');
      if (!row.managed) throw new ApiError('key_not_managed');
      // A new value is a new credential: an expiring key cannot obtain one that outlives it.
      const bound = await issuerExpiry(deps.db, principal);
      if (bound && (!row.expires_at || new Date(row.expires_at).getTime() > bound.getTime())) {
        throw new ApiError('key_outlives_caller', 'An expiring key cannot regenerate a key that expires later than itself, or never.');
      }

      // The plaintext is made here and stays in this process: the workflow gets only its keyed hash.
      const plaintext = generateApiKey(row.type === 'SECRET' ? 'sk' : 'pk', row.environment === 'production' ? 'live' : 'test');
      const rotation = row.rotation_count + 1;
      const input: ApiKeyRotationInput = {
        keyId: row.id,
        rotation,
        newKeyHash: hashApiKey(plaintext, deps.config.apiKeyPepper),
        newKeyPrefix: plaintext.slice(0, 8),
        newKeyLast4: plaintext.slice(-4),
        actor: creatorOf(principal),
        requestId: ctx.state.requestId,
      };
      const run = await rotateApiKey(await deps.temporal(), input);
      const now = await findApiKey(deps.db, row.id);
      // Unfinished in time: the rotation may still have landed just before; then the new value is the answer.
      const landed = now !== undefined && (run.outcome === 'rotated' || now.key_hash === input.newKeyHash);
      if (!landed) {
        throw new ApiError('temporal_unavailable', 'The key could not be regenerated in time; try again.', {}, { 'Retry-After': '5' });
      }
      deps.auth.invalidate();
      return { data: serializeApiKey(now, plaintext) };
    },
  }),
];
