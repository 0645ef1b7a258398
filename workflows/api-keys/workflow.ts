import { proxyActivities } from '@temporalio/workflow';
import type { ApiKeyActivities, ApiKeyRotationInput, ApiKeyRotationResult } from '../../contracts/api-keys';
import { eventFanOut } from '../webhooks/fan-out';

const { rotateApiKeySecret } = proxyActivities<ApiKeyActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '200ms', maximumInterval: '5s', maximumAttempts: 10 },
});

/**
 * Rotates a managed API key. The activity swaps the hash, records the notification and the event in
 * one transaction, conditional on the rotation number: the old value stops working at once, retries
 * are harmless and two rotations cannot interleave.
 */
export async function apiKeyRotationWorkflow(input: ApiKeyRotationInput): Promise<ApiKeyRotationResult> {
  const { rotatedAt, environment, eventIds } = await rotateApiKeySecret(input);
  // The api_key.rotated event goes out to the account's webhook endpoints like any other.
  if (eventIds.length) await eventFanOut.fanOutEvents({ environment, eventIds });
  return { keyId: input.keyId, rotation: input.rotation, rotatedAt };
}
