/**
 * API-key rotation: the workflow `api-key-rotation/<key_id>/<rotation>` and the activity it calls.
 * Imported by the workflow (in Temporal's sandbox) and by the API and activities, so it stays free of
 * Node and I/O. The new key's plaintext never enters it: only its keyed hash and display parts.
 */

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

/** One workflow per rotation number: a failed rotation may be retried under it, a completed one never runs twice. */
export const apiKeyRotationWorkflowId = (keyId: string, rotation: number) => `api-key-rotation/${keyId}/${rotation}`;

/** Failure types the rotation activity ends with (non-retryable), read by the command client. */
export const API_KEY_ROTATION_FAILURES = {
  /** The key is gone. */
  notFound: 'not_found',
  /** The key was deleted, unmanaged or rotated by someone else meanwhile. */
  changed: 'invalid_state',
} as const;

/** `rotateApiKeySecret`: when the swap landed, and the events to fan out. */
export interface RotatedApiKey { rotatedAt: string }

/** The activities the rotation workflow calls (its events go out through the webhooks feature's `eventFanOut`); activities/api-keys.ts builds them. */
export interface ApiKeyActivities {
  /** Swaps a managed key's hash and records the rotation; idempotent under activity retries. */
  rotateApiKeySecret(input: ApiKeyRotationInput): Promise<RotatedApiKey>;
}
