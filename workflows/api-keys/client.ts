/**
 * The API-key command client: the only code that starts rotation workflows from the client side
 * (docs/architecture.md). Temporal's failures are read by type and answered in the error catalogue.
 */
import { Client, WorkflowFailedError } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { ApiError } from '../../lib/errors';
import { failureType, isAlreadyStarted } from '../client';
import { TASK_QUEUES } from '../../contracts/temporal';
import { API_KEY_ROTATION_FAILURES, ApiKeyRotationInput, ApiKeyRotationResult, apiKeyRotationWorkflowId } from '../../contracts/api-keys';
import { apiKeyRotationWorkflow } from './workflow';

/** How a rotation ended: done, or not within its 30 s (it may still have landed just before). */
export type RotationOutcome = { outcome: 'rotated'; result: ApiKeyRotationResult } | { outcome: 'unfinished' };

/**
 * Runs one rotation to its end. Already running under this number → 409 conflict; the key changed
 * meanwhile → 409 conflict; the key is gone → 404.
 */
export async function rotateApiKey(client: Client, input: ApiKeyRotationInput): Promise<RotationOutcome> {
  try {
    const result = await client.workflow.execute(apiKeyRotationWorkflow, {
      workflowId: apiKeyRotationWorkflowId(input.keyId, input.rotation),
      taskQueue: TASK_QUEUES.payments,
      args: [input],
      // A failed rotation may be retried under the same number; a completed one never runs twice.
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
      // Bounded, so a request never hangs on a missing worker; the rotation is then failed, not pending.
      workflowExecutionTimeout: '30s',
    });
    return { outcome: 'rotated', result };
  } catch (err) {
    if (isAlreadyStarted(err)) throw new ApiError('conflict', 'This key is already being regenerated.');
    if (!(err instanceof WorkflowFailedError)) throw err;
    const type = failureType(err);
    if (type === API_KEY_ROTATION_FAILURES.changed) throw new ApiError('conflict', 'The key changed while it was being regenerated.');
    if (type === API_KEY_ROTATION_FAILURES.notFound) throw ApiError.notFound('API key');
    return { outcome: 'unfinished' };
  }
}
