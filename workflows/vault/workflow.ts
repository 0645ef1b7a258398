import { continueAsNew, proxyActivities, setCurrentDetails, setHandler, upsertMemo, workflowInfo } from '@temporalio/workflow';
import {
  VAULT_ROTATION_BATCH, VAULT_ROTATION_BATCHES_PER_RUN, type VaultActivities, type VaultRotationInput, type VaultRotationProgress, vaultRotationProgressQuery,
} from '../../contracts/vault';

const { listSealedColumns, reencryptBatch } = proxyActivities<VaultActivities>({
  startToCloseTimeout: '2m',
  // Postgres being away only delays the rotation; a wrong or missing key fails it (non-retryable).
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

function describe(progress: VaultRotationProgress): string {
  const moved = progress.columns.reduce((n, c) => n + c.reencrypted, 0);
  const done = progress.columns.filter((c) => c.done).length;
  return `Moving vault values to key ${progress.keyId}: ${done}/${progress.columns.length} columns done, ${moved} values re-encrypted`;
}

/**
 * Moves every vault value to `keyId`, column by column (db/sealed-columns.ts), one batch per activity;
 * each row is replaced only if unchanged meanwhile, so running a batch twice, or concurrently with the
 * API, changes nothing it should not. Progress is a query, the memo and the UI's current details.
 */
export async function vaultRotationWorkflow(input: VaultRotationInput): Promise<VaultRotationProgress> {
  const progress: VaultRotationProgress = { keyId: input.keyId, columns: input.columns ?? [], batches: input.batches ?? 0 };
  setHandler(vaultRotationProgressQuery, () => progress);
  if (!input.columns) progress.columns = (await listSealedColumns()).map((column) => ({ column, reencrypted: 0, skipped: 0, done: false }));
  const { columns } = progress;
  const report = () => {
    setCurrentDetails(describe(progress));
    upsertMemo({ progress: describe(progress) });
  };
  report();
  for (let run = 0; run < (input.batchesPerRun ?? VAULT_ROTATION_BATCHES_PER_RUN) && !workflowInfo().continueAsNewSuggested; run++) {
    const column = columns.find((c) => !c.done);
    if (!column) return progress;
    const batch = await reencryptBatch({ column: column.column, keyId: input.keyId, batchSize: input.batchSize ?? VAULT_ROTATION_BATCH });
    column.reencrypted += batch.reencrypted;
    column.skipped += batch.skipped;
    column.done = batch.done;
    progress.batches += 1;
    report();
  }
  if (columns.every((c) => c.done)) return progress;
  return continueAsNew<typeof vaultRotationWorkflow>({ ...input, columns, batches: progress.batches });
}
