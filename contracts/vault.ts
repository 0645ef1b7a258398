/**
 * The vault key rotation's contract (docs/production.md#rotating-the-vault-key): one workflow per
 * target key moves every vault value to that key, a batch per activity. Imported by the workflow
 * (inside Temporal's sandbox), the activities and the client, so it stays free of Node and I/O.
 */
import { defineQuery } from '@temporalio/workflow';

/** One rotation per target key: starting it again while it runs attaches; after a crash it resumes. */
export const vaultRotationWorkflowId = (keyId: string) => `vault-rotation-${keyId}`;

/** Rows per batch (one activity). */
export const VAULT_ROTATION_BATCH = 200;

/** One sealed column's share of the rotation. */
export interface ColumnProgress {
  /** lib's SEALED_COLUMNS name: `live.payment_methods.pan_encrypted`. */
  column: string;
  reencrypted: number;
  /** Rows changed meanwhile by another write (already under the newest key): left as they are. */
  skipped: number;
  done: boolean;
}

export interface VaultRotationInput {
  /** The key every value moves to: the newest of the workers' VAULT_KEYS. */
  keyId: string;
  /** Progress carried over continue-as-new; unset at the first start (the workflow asks the registry). */
  columns?: ColumnProgress[];
  batches?: number;
  /** Rows per batch; VAULT_ROTATION_BATCH unless a test says otherwise. */
  batchSize?: number;
  /** Batches per run before continuing as new; VAULT_ROTATION_BATCHES_PER_RUN unless a test says otherwise. */
  batchesPerRun?: number;
}

/** Batches per run before continuing as new, so the history stays short however many rows there are. */
export const VAULT_ROTATION_BATCHES_PER_RUN = 100;

export interface VaultRotationProgress {
  keyId: string;
  columns: ColumnProgress[];
  /** Batches run, over every continue-as-new. */
  batches: number;
}

export const vaultRotationProgressQuery = defineQuery<VaultRotationProgress>('vaultRotationProgress');

/** Failure types the activity raises (non-retryable: a person must fix the ring first). */
export const VAULT_ROTATION_FAILURES = {
  /** This worker's newest key is not the rotation's target. */
  wrongKey: 'VaultRotationWrongKey',
  /** A value is under a key the ring no longer holds. */
  keyMissing: 'VaultKeyMissing',
} as const;

export interface VaultBatch {
  /** Rows moved to the target key by this batch. */
  reencrypted: number;
  /** Rows found stale but changed meanwhile by another write. */
  skipped: number;
  /** Whether the column holds nothing more to move (or nothing more this pass can move). */
  done: boolean;
}

/** The activity the rotation calls; activities/vault.ts builds it (`satisfies` this). */
export interface VaultActivities {
  /** The names of every sealed column (the registry in db/sealed-columns.ts). */
  listSealedColumns(): Promise<string[]>;
  /** Moves up to `batchSize` of the column's values not yet under `keyId` to it. */
  reencryptBatch(args: { column: string; keyId: string; batchSize: number }): Promise<VaultBatch>;
}
