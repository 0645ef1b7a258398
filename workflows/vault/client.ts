/**
 * The key rotation's command client: the only code that starts or reads a vault rotation from the
 * client side (`npm run ops -- vault:rotate`, `vault:status`).
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { TASK_QUEUES } from '../../contracts/temporal';
import { type VaultRotationInput, type VaultRotationProgress, vaultRotationProgressQuery, vaultRotationWorkflowId } from '../../contracts/vault';
import { vaultRotationWorkflow } from './workflow';

/**
 * Starts the rotation to `keyId`, or attaches to the one already running (the id is fixed per key, so
 * a second start, or one after a crash, finds it). A finished rotation runs again: it moves what is
 * left (values written under an older key since), and nothing if nothing is.
 */
export async function startVaultRotation(client: Client, input: Pick<VaultRotationInput, 'keyId' | 'batchSize' | 'batchesPerRun'>) {
  return client.workflow.start(vaultRotationWorkflow, {
    workflowId: vaultRotationWorkflowId(input.keyId),
    taskQueue: TASK_QUEUES.payments,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    staticSummary: `Vault key rotation to ${input.keyId}`,
    staticDetails: 'Re-encrypts every vault value (cards, credentials, webhook secrets, sealed replies) under the newest key; see docs/production.md#rotating-the-vault-key.',
  });
}

export interface VaultRotationState {
  status: string;
  progress?: VaultRotationProgress;
  /** Why it failed, when it did. */
  failure?: string;
}

/** The rotation to `keyId` as Temporal has it: its status and progress; undefined if never started. */
export async function vaultRotationState(client: Client, keyId: string): Promise<VaultRotationState | undefined> {
  const handle = client.workflow.getHandle(vaultRotationWorkflowId(keyId));
  try {
    const { status } = await handle.describe();
    // Before its first workflow task (no worker yet) a running rotation answers no query.
    if (status.name === 'RUNNING') return { status: status.name, progress: await handle.query(vaultRotationProgressQuery).catch(() => undefined) };
    if (status.name === 'COMPLETED') return { status: status.name, progress: await handle.result() };
    return { status: status.name, failure: await handle.result().then(() => undefined, (err: Error) => (err.cause as Error | undefined)?.message ?? err.message) };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}
