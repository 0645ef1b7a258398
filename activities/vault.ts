import { ApplicationFailure } from '@temporalio/activity';
import { replaceSealed, SEALED_COLUMNS, sealedColumn, type SealedColumn, type SealedRow, staleSealedRows } from '../db/sealed-columns';
import type { Vault } from '../lib/vault';
import { VAULT_ROTATION_FAILURES, type VaultActivities, type VaultBatch } from '../contracts/vault';
import type { ActivityDeps } from './deps';

/**
 * The key rotation's batches (workflows/vault): each re-encrypts up to `batchSize` values of one
 * column under the newest key, with a conditional UPDATE per row. Plaintext stays inside the
 * activity: only counts go back to history.
 */
export function vaultActivities({ db, vault }: ActivityDeps & { vault: Vault }): VaultActivities {
  return {
    async listSealedColumns(): Promise<string[]> {
      return SEALED_COLUMNS.map((c) => c.name);
    },

    async reencryptBatch({ column, keyId, batchSize }): Promise<VaultBatch> {
      if (vault.currentKeyId !== keyId) {
        throw ApplicationFailure.nonRetryable(
          `this worker's newest vault key is "${vault.currentKeyId}", the rotation moves values to "${keyId}": give every process the same VAULT_KEYS, restart, then run vault:rotate again`,
          VAULT_ROTATION_FAILURES.wrongKey,
        );
      }
      const c = sealedColumn(column);
      const rows = await staleSealedRows(db, c, keyId, batchSize);
      let reencrypted = 0;
      for (const row of rows) {
        if (await reencryptRow(db, vault, c, row)) reencrypted += 1;
      }
      // A short batch means the column is through; so does one where every row changed meanwhile
      // (a process still on the old ring would otherwise keep this loop going; vault:status shows them).
      return { reencrypted, skipped: rows.length - reencrypted, done: rows.length < batchSize || reencrypted === 0 };
    },
  };
}

async function reencryptRow(db: ActivityDeps['db'], vault: Vault, c: SealedColumn, row: SealedRow): Promise<boolean> {
  let plaintext: string;
  try {
    plaintext = vault.decrypt(row.value);
  } catch (err) {
    const message = `${c.name} (row ${c.key.length === 1 ? row.key[0] : 'of a stored reply'}): ${(err as Error).message}`;
    throw ApplicationFailure.nonRetryable(message, VAULT_ROTATION_FAILURES.keyMissing);
  }
  const fingerprint = c.fingerprintColumn ? vault.fingerprint(plaintext) : undefined;
  return replaceSealed(db, c, row, vault.encrypt(plaintext), fingerprint);
}
