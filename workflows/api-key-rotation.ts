import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { rotateApiKeySecret, fanOutEvents } = proxyActivities<Activities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '200ms', maximumInterval: '5s', maximumAttempts: 10 },
});

export interface ApiKeyRotationInput {
  keyId: string;
  /** The rotation number this run makes (the key's rotation_count after it). */
  rotation: number;
  /**
   * The keyed hash of the new secret with its display prefix and last four characters. The plaintext
   * never enters the workflow: the API generates it, keeps it in memory and returns it once.
   */
  newKeyHash: string;
  newKeyPrefix: string;
  newKeyLast4: string;
  actor: { type: string; id: string };
  requestId?: string;
}

export interface ApiKeyRotationResult { keyId: string; rotation: number; rotatedAt: string }

/**
 * Rotates a managed API key. The activity swaps the hash, records the notification and the event in
 * one transaction, conditional on the rotation number: the old value stops working at once, retries
 * are harmless and two rotations cannot interleave.
 */
export async function apiKeyRotationWorkflow(input: ApiKeyRotationInput): Promise<ApiKeyRotationResult> {
  const { rotatedAt, environment, eventIds } = await rotateApiKeySecret(input);
  // The api_key.rotated event goes out to the account's webhook endpoints like any other.
  if (eventIds.length) await fanOutEvents({ environment, eventIds });
  return { keyId: input.keyId, rotation: input.rotation, rotatedAt };
}
