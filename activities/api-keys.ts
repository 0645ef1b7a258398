import { ApplicationFailure } from '@temporalio/common';
import type { Db } from '../db/knex';
import { newId } from '../lib/ids';
import { appendEvents } from './events';
import type { Environment } from '../db/environments';
import type { ApiKeyRotationInput } from '../workflows/api-key-rotation';

export function apiKeyActivities(db: Db) {
  return {
    /** Swaps a managed key's hash and records the rotation; idempotent under activity retries. */
    async rotateApiKeySecret(input: ApiKeyRotationInput): Promise<{ rotatedAt: string; environment: Environment; eventIds: string[] }> {
      return db.transaction(async (trx) => {
        const key = await trx('core.api_keys as k')
          .join('core.accounts as a', 'a.id', 'k.account_id')
          .where('k.id', input.keyId)
          .forUpdate()
          .first('k.*', 'a.workspace_id');
        if (!key) throw ApplicationFailure.nonRetryable('no such key', 'not_found');
        if (key.rotation_count === input.rotation && key.key_hash === input.newKeyHash) {
          // a retry after our own commit: the event was written then
          return { rotatedAt: new Date(key.updated_at).toISOString(), environment: key.environment, eventIds: [] };
        }
        if (key.deleted || !key.managed || key.rotation_count !== input.rotation - 1) {
          throw ApplicationFailure.nonRetryable('the key changed while it was being rotated', 'invalid_state');
        }
        const [updated] = await trx('core.api_keys').where({ id: input.keyId }).update({
          key_hash: input.newKeyHash,
          key_prefix: input.newKeyPrefix,
          key_last4: input.newKeyLast4,
          rotation_count: input.rotation,
          updated_at: trx.fn.now(),
        }).returning('updated_at');
        const details = { key_id: key.id, key_name: key.name, rotation: input.rotation, actor_type: input.actor.type, actor_id: input.actor.id };
        await trx('core.notifications').insert({ id: newId('ntf'), account_id: key.account_id, type: 'api_key.rotated', details: JSON.stringify(details) });
        const eventIds = await appendEvents(trx, key.environment, [{
          event: 'api_key.rotated', accountId: key.account_id, workspaceId: key.workspace_id, subjectType: 'api_key',
          subjectId: key.id, data: details, actorType: input.actor.type, actorId: input.actor.id, requestId: input.requestId,
        }]);
        return { rotatedAt: new Date(updated.updated_at).toISOString(), environment: key.environment, eventIds };
      });
    },
  };
}
