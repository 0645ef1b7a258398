import { proxyActivities } from '@temporalio/workflow';
import type { ApiKeyActivities, ApiKeyRotationInput, ApiKeyRotationResult } from '../../contracts/api-keys';

const { rotateApiKeySecret } = proxyActivities<ApiKeyActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '200ms', maximumInterval: '5s', maximumAttempts: 10 },
});

/**
 * Rotates a managed API key. The activity swaps the hash, records the notification and the event in
 * one transaction, conditional on the rotation number: the old value stops working at once, retries
 * are harmless and two rotations cannot interleave. The api_key.rotated event goes out to the account's
 * webhook endpoints like any other (docs/webhooks.md#the-outbox-how-events-leave).
 */
export async function apiKeyRotationWorkflow(input: ApiKeyRotationInput): Promise<ApiKeyRotationResult> {
  const { rotatedAt } = await rotateApiKeySecret(input);
  return { keyId: input.keyId, rotation: input.rotation, rotatedAt };
}
