import { ApplicationFailure } from '@temporalio/common';
import type { Db } from '../db/knex';
import { swapApiKeySecret } from '../db/api-keys';
import { appendEvents } from '../db/events';
import { insertNotifications } from '../db/notifications';
import { API_KEY_ROTATION_FAILURES, ApiKeyActivities, ApiKeyRotationInput, RotatedApiKey } from '../contracts/api-keys';

/** The API-key activities; the rotation workflow proxies them through the contract's ApiKeyActivities. */
export function apiKeyActivities(db: Db) {
  return {
    /** Swaps a managed key's hash and records the rotation (notification and event, same transaction); idempotent under activity retries. */
    async rotateApiKeySecret(input: ApiKeyRotationInput): Promise<RotatedApiKey> {
      return db.transaction(async (trx) => {
        const swap = await swapApiKeySecret(trx, input);
        if (swap.outcome === 'not_found') throw ApplicationFailure.nonRetryable('no such key', API_KEY_ROTATION_FAILURES.notFound);
        if (swap.outcome === 'changed') {
          throw ApplicationFailure.nonRetryable('the key changed while it was being rotated', API_KEY_ROTATION_FAILURES.changed);
        }
        const { key } = swap;
        // A retry after our own commit: the event was written then.
        if (swap.outcome === 'already') return { rotatedAt: new Date(key.updated_at).toISOString() };
        const details = { key_id: key.id, key_name: key.name, rotation: input.rotation, actor_type: input.actor.type, actor_id: input.actor.id };
        await insertNotifications(trx, [{ accountId: key.account_id, type: 'api_key.rotated', details }]);
        await appendEvents(trx, key.environment, [{
          event: 'api_key.rotated', accountId: key.account_id, workspaceId: key.workspace_id, subjectType: 'api_key',
          subjectId: key.id, data: details, actorType: input.actor.type, actorId: input.actor.id, requestId: input.requestId,
        }]);
        return { rotatedAt: new Date(swap.updatedAt).toISOString() };
      });
    },
  } satisfies ApiKeyActivities;
}
