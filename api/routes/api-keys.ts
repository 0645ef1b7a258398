import { Type } from '@sinclair/typebox';
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowIdReusePolicy } from '@temporalio/common';
import { insertApiKey } from '../../db/repositories/api-keys';
import { serializeApiKey } from '../../db/serialize';
import { looksLikeId } from '../../lib/ids';
import { generateApiKey, hashApiKey } from '../../lib/secrets';
import type { ApiKeyRotationInput, ApiKeyRotationResult } from '../../workflows/api-key-rotation';
import { TASK_QUEUES } from '../../workflows/shared';
import type { Db } from '../../db/knex';
import type { Access } from '../auth/access';
import { fromPermissionMap, PermissionMap, toPermissionMap, ungrantable, unknownPermissions } from '../auth/permissions';
import { ApiError, FieldError } from '../errors';
import { defineRoute } from '../route';
import { Metadata, Obj, Resource } from '../schemas';

const S = Type.String();
const NS = Type.Union([S, Type.Null()]);
const TS = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

const ApiKeySchema = Resource('api_key', {
  id: S, account_id: S, name: S, type: Type.Union([Type.Literal('SECRET'), Type.Literal('PUBLISHABLE')]),
  environment: S, key: NS, redacted_key: S, status: S, permissions: Type.Record(S, Type.Array(S)),
  metadata: Type.Record(S, Type.Unknown()), managed: Type.Boolean(), deleted: Type.Boolean(),
  last_used_ip: NS, last_used_at: TS, expires_at: TS, created_at: TS, updated_at: TS,
});

/** What a publishable key can ever do: read a payment and confirm it. */
const PUBLISHABLE_PERMISSIONS = new Set(['payment:read', 'payment:confirm']);

const KeyParams = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });

/** The type of the application failure at the root of a failed workflow (activity failures wrap it). */
function failureType(err: WorkflowFailedError): string | undefined {
  for (let cause: unknown = err.cause; cause instanceof Error; cause = (cause as { cause?: unknown }).cause) {
    if (cause instanceof ApplicationFailure && cause.type) return cause.type;
  }
  return undefined;
}

/**
 * Refuses to issue a credential holding `granted` to a caller holding `holder`, unless the caller holds
 * every one of those permissions itself. Key creation and regeneration both go through here.
 */
function assertMayGrant(holder: ReadonlySet<string>, granted: Iterable<string>, message: string): void {
  const beyond = ungrantable(holder, granted);
  if (beyond.length) throw new ApiError('insufficient_permissions', `${message}: ${beyond.join(', ')}.`, { required: beyond });
}

/** A live (not deleted) key by id, visible to the caller with this route's permission; else 404. */
async function locateKey(db: Db, access: Access, id: string) {
  const row = looksLikeId(id, 'key') ? await db('core.api_keys').where({ id, deleted: false }).first() : undefined;
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
      expires_at: Type.Optional(Type.String({ format: 'date-time' })),
    }),
    response: ApiKeySchema,
    async handler({ body, access, deps }) {
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
      const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
      if (expiresAt && expiresAt.getTime() <= Date.now()) fields.push({ path: 'body/expires_at', message: 'must be in the future' });
      if (fields.length) throw ApiError.validation(fields);

      const defaults = type === 'PUBLISHABLE' ? PUBLISHABLE_PERMISSIONS : scope.permissions;
      const requested = body.permissions ? fromPermissionMap(body.permissions) : new Set(defaults);
      // Publishable keys included: their payment:read/confirm are rights like any other.
      assertMayGrant(scope.permissions, requested, 'A key cannot be given permissions its creator lacks');
      const { row, plaintext } = await insertApiKey(deps.db, deps.config.apiKeyPepper, {
        accountId: scope.account.id,
        environment: scope.environment,
        type,
        name: body.name,
        managed: false,
        permissions: toPermissionMap(requested) as PermissionMap,
        metadata: body.metadata,
        expiresAt,
      });
      return { data: serializeApiKey(row, plaintext) };
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
      const rows = await deps.db('core.api_keys').where({ account_id: scope.account.id, deleted: false })
        .orderBy('created_at', 'desc').orderBy('id', 'desc');
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
      const count = await deps.db('core.api_keys').where({ id: params.id, deleted: false })
        .update({ deleted: true, updated_at: deps.db.fn.now() });
      if (!count) throw ApiError.notFound('API key');
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
    errors: ['key_not_managed', 'conflict', 'temporal_unavailable'],
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

      // The plaintext is made here and stays in this process: the workflow gets only its keyed hash.
      const plaintext = generateApiKey(row.type === 'SECRET' ? 'sk' : 'pk', row.environment === 'production' ? 'live' : 'test');
      const rotation = row.rotation_count + 1;
      const input: ApiKeyRotationInput = {
        keyId: row.id,
        rotation,
        newKeyHash: hashApiKey(plaintext, deps.config.apiKeyPepper),
        newKeyPrefix: plaintext.slice(0, 8),
        newKeyLast4: plaintext.slice(-4),
        actor: principal.kind === 'api_key' ? { type: 'api_key', id: principal.keyId } : { type: principal.actorType, id: principal.userId },
        requestId: ctx.state.requestId,
      };
      const client = await deps.temporal();
      try {
        await client.workflow.execute<(i: ApiKeyRotationInput) => Promise<ApiKeyRotationResult>>('apiKeyRotationWorkflow', {
          workflowId: `api-key-rotation/${row.id}/${rotation}`,
          taskQueue: TASK_QUEUES.payments,
          args: [input],
          // A failed rotation may be retried under the same number; a completed one never runs twice.
          workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
          // Bounded, so a request never hangs on a missing worker; the rotation is then failed, not pending.
          workflowExecutionTimeout: '30s',
        });
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) {
          throw new ApiError('conflict', 'This key is already being regenerated.');
        }
        if (err instanceof WorkflowFailedError) {
          const reason = failureType(err);
          if (reason === 'invalid_state') throw new ApiError('conflict', 'The key changed while it was being regenerated.');
          if (reason === 'not_found') throw ApiError.notFound('API key');
          // Timed out: the rotation may still have landed just before; then the new value is the answer.
          const now = await deps.db('core.api_keys').where({ id: row.id }).first();
          if (now?.key_hash === input.newKeyHash) {
            deps.auth.invalidate();
            return { data: serializeApiKey(now, plaintext) };
          }
          throw new ApiError('temporal_unavailable', 'The key could not be regenerated in time; try again.', {}, { 'Retry-After': '5' });
        }
        throw err;
      }
      deps.auth.invalidate();
      const updated = await deps.db('core.api_keys').where({ id: row.id }).first();
      return { data: serializeApiKey(updated, plaintext) };
    },
  }),
];
